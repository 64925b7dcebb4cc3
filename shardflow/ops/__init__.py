"""Differentiable ops (layer L3), one family per file. Importing this package registers
every op in the dispatch table that ``Tensor`` methods use.

Files: arithmetic (add/sub/mul/div — the template for a family), elementwise (unary math,
activations, comparisons, logical, where/clamp/pow), elementwise_extra (rounding, misc),
reduce, shape, index, matmul (matmul/bmm/einsum/linear), sort (sort/topk/multinomial), loss,
normalization, attention, conv, pool, sampling (interpolate, im2col/col2im), dropout, creation,
conversion, special_functions (lgamma/digamma/polygamma/erfinv/xlogy), cholesky (Cholesky and
triangular solves), complex_ops (polar, view_as_real/complex, real/imag, conj, angle),
gamma_sampling (Gamma/Dirichlet draws with implicit gradients), tensor_products (kron,
tensordot, cross, addmv, addr), sparse_coo (sparse COO tensors, sparse @ dense), unique
(unique, unique_consecutive).
"""

from .arithmetic import add, div, mul, neg, reciprocal, sub
from .attention import *
from .cholesky import *
from .complex_ops import *
from .conv import *
from .conversion import clone, contiguous, copy_, fill_
from .creation import *
from .dropout import *
from .elementwise import *
from .elementwise_extra import *
from .gamma_sampling import *
from .index import *
from .loss import *
from .matmul import *
from .normalization import *
from .pool import *
from .reduce import *
from .sampling import *
from .shape import *
from .sort import *
from .sparse_coo import *
from .special_functions import *
from .tensor_products import *
from .unique import *
