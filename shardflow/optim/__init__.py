"""Optimizers (layer L5) with PyTorch's names, formulas and ``state_dict`` format:
SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, LBFGS, NAdam, RAdam, Adamax, Rprop, ASGD,
Adafactor, SparseAdam, Muon, ``lr_scheduler`` and ``swa_utils``. Updates run in
place on raw arrays (no autograd, no Tensor allocation)."""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from .swap_in import swap_in_optimizer_params_and_state

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS",
           "NAdam", "RAdam", "Adamax", "Rprop", "ASGD", "Adafactor", "SparseAdam", "Muon",
           "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state"]
