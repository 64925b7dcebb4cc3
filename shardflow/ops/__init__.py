"""Differentiable ops (layer L3), one family per file. Importing this package registers
every op in the dispatch table that ``Tensor`` methods use.

Files: arithmetic (add/sub/mul/div — the template for a family), elementwise (unary math,
activations, comparisons, logical, where/clamp/pow), elementwise_extra (rounding, misc),
reduce, shape, index, matmul (matmul/bmm/einsum/linear), sort (sort/topk/multinomial), loss,
ctc (ctc_loss), embedding_bag, normalization, attention, conv, pool, sampling (interpolate,
im2col/col2im), dropout, creation, conversion.
"""

from . import linalg
from .arithmetic import add, div, mul, neg, reciprocal, sub
from .attention import *
from .conv import *
from .conversion import clone, contiguous, copy_, fill_
from .creation import *
from .ctc import *
from .diag import *
from .dropout import *
from .elementwise import *
from .elementwise_extra import *
from .embedding_bag import *
from .grid_sample import *
from .index import *
from .index_extra import *
from .linalg_ops import *
from .loss import *
from .math_extra import *
from .matmul import *
from .misc_extra import *
from .normalization import *
from .pool import *
from .reduce import *
from .reduce_extra import *
from .sampling import *
from .search import *
from .shape import *
from .shape_extra import *
from .sort import *
from .tensor_methods import *
