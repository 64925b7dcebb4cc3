"""Layer modules (``torch.nn.modules``): one family per file."""

from types import ModuleType as _ModuleType

# torch.nn.modules.<file> paths that re-export layers of the files below
from . import batchnorm, fold, instancenorm, upsampling, utils
from .activation import *
from .adaptive import *
from .batchnorm import SyncBatchNorm
from .channelshuffle import *
from .container import *
from .conv import *
from .cross_map_lrn import *
from .distance import *
from .dropout import *
from .flatten import *
from .fractional_pool import *
from .lazy import *
from .linear import *
from .loss import *
from .module import Module
from .normalization import *
from .padding import *
from .pixelshuffle import *
from .pooling import *
from .rnn import *
from .sampling import *
from .sparse import *
from .transformer import *

# what ``from .modules import *`` gives ``shardflow.nn``: the layers, not this package's
# submodules (``modules.utils`` would shadow ``nn.utils``)
__all__ = [_n for _n, _v in dict(globals()).items() if not _n.startswith("_") and not isinstance(_v, _ModuleType)]
