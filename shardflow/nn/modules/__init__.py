"""Layer modules (``torch.nn.modules``): one family per file."""

from .activation import *
from .channelshuffle import *
from .container import *
from .conv import *
from .distance import *
from .dropout import *
from .flatten import *
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
