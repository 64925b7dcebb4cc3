"""Optimizers (layer L5) with PyTorch's names, formulas and ``state_dict`` format:
SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, LBFGS, ``lr_scheduler`` and ``swa_utils``. Updates run in
place on raw arrays (no autograd, no Tensor allocation)."""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS",
           "lr_scheduler", "swa_utils"]
