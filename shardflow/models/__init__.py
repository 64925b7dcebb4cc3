"""Reference models (layer L7): MLP, LeNet-5, ResNet (CIFAR-20, ImageNet-18/50), GPT, BERT.

Each has a ``@dataclass`` config that validates itself, ``num_parameters()`` and an analytic
``flops_per_sample()`` (convention in ``_common.py``) that benchmarks use.
"""

from .bert import BertConfig, BertForMaskedLM, BertModel
from .gpt import GPT, GPTConfig
from .lenet import LeNet5, LeNetConfig
from .mlp import MLP, MLPConfig
from .resnet import ResNet, ResNetConfig, resnet18, resnet20, resnet50

__all__ = ["MLP", "MLPConfig", "LeNet5", "LeNetConfig", "ResNet", "ResNetConfig", "resnet18",
           "resnet20", "resnet50", "GPT", "GPTConfig", "BertConfig", "BertForMaskedLM", "BertModel"]
