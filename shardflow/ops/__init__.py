"""Differentiable ops (layer L3), one family per file. Importing this package registers
every op in the dispatch table that ``Tensor`` methods use.

Files: arithmetic (add/sub/mul/div — the template for a family), elementwise (unary math,
activations, comparisons, logical, where/clamp/pow), elementwise_extra (rounding, misc),
math_extra (inverse hyperbolics, special functions over special_functions.py, atan2, hypot,
logaddexp, xlogy ...), reduce, reduce_extra (nansum, cummax, logcumsumexp, quantile ...),
search (searchsorted, unique, bincount ...), shape, shape_extra (atleast_*, rot90, block_diag
...), index, index_extra (index_copy, scatter_reduce, masked_scatter), matmul
(matmul/bmm/einsum/linear), linalg_ops (inverse, det, solve, cross, kron, tensordot, cdist) and
linalg (``torch.linalg``'s names), diag, sort (sort/topk/multinomial), loss, ctc (ctc_loss),
embedding_bag, normalization, attention, conv, pool, sampling (interpolate, im2col/col2im),
grid_sample, dropout, creation, conversion, misc_extra (gcd, trapezoid, windows, *_scatter ...),
tensor_methods (in-place forms, view changes, ``new``, ``asarray`` ...).
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
