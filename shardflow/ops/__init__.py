"""Differentiable ops (layer L3), one family per file. Importing this package registers
every op in the dispatch table that ``Tensor`` methods use.

Files: arithmetic (add/sub/mul/div — the template for a family), elementwise (unary math,
activations, where/clamp/pow), rounding (rounding, rounded division, remainder/fmod),
comparison (comparisons, NaN tests, isclose, logical, bitwise),
reduce, reduce_extra (nansum, cummax, logcumsumexp, quantile ...), search (searchsorted,
unique, bincount ...), shape, shape_extra (atleast_*, rot90, block_diag ...), index,
index_extra (index_copy, scatter_reduce, masked_scatter), matmul (matmul/bmm/einsum/linear),
linalg_ops (inverse, det, solve, cdist) and _linalg_names (``torch.linalg``'s names), tensor_products
(kron, tensordot, cross, addmv, addr), cholesky (Cholesky and triangular solves),
decompositions (qr, eigh, svd), linalg_derived (pinv, lstsq, matrix_rank, matrix_exp, cond), linalg_lu
(LU family), linalg_eig, linalg_householder (geqrf, orgqr, ormqr), linalg_ldl, linalg_lowrank
(svd_lowrank, pca_lowrank), diag, sort
(sort/topk/multinomial), loss, softmax (softmax, log_softmax), ctc (ctc_loss), embedding_bag, normalization, attention, conv,
pool, sampling (interpolate, im2col/col2im), grid_sample, dropout, creation, conversion,
special_functions (lgamma/digamma/polygamma/mvlgamma/erfinv/xlogy), math_extra (inverse
hyperbolics, atan2, hypot, logaddexp ...), misc_extra (gcd, trapezoid, windows, *_scatter
...), complex_ops (polar, view_as_real/complex, real/imag, conj, angle), gamma_sampling
(Gamma/Dirichlet draws with implicit gradients), sparse_coo (sparse COO tensors, sparse @
dense), sparse_compressed (CSR/CSC tensors on the COO kernels), fft_ops (``torch.fft``'s transforms, as ``fft_fft`` ...), spectral (stft / istft), tensor_methods (in-place forms, view changes, ``new``, ``asarray`` ...); stats (cov, mode, nanmedian, renorm, gradient, histogramdd), index_reduce (put,
index_reduce, segment_reduce, nonzero_static), tensor_compat
(range, DLPack, resize_, in-place forms, dropout_ ...), tensor_aliases (isreal, is_neg,
adjoint, narrow_copy, unsafe_split ...: other ops under torch's names), strided (as_strided
and its in-place, scatter forms), view_copies (the ``*_copy`` forms of the view ops), removed
(torch's removed matrix_rank/solve/lstsq/eig/symeig: their error messages), tensor_storage
(untyped_storage, storage, set_, is_set_to over backend/storage.py).
"""

from .arithmetic import add, div, mul, neg, reciprocal, sub
from .attention import *
from .bessel import *
from .cholesky import *
from .comparison import *
from .complex_ops import *
from .conv import *
from .conversion import clone, contiguous, copy_, fill_
from .creation import *
from .ctc import *
from .decompositions import *
from .diag import *
from .dropout import *
from .elementwise import *
from .embedding_bag import *
from .fft_ops import *
from .gamma_sampling import *
from .grid_sample import *
from .incomplete_gamma import *
from .index import *
from .index_extra import *
from .index_reduce import *
from .linalg_derived import *
from .linalg_eig import *
from .linalg_householder import *
from .linalg_ldl import *
from .linalg_lowrank import *
from .linalg_lu import *
from .linalg_ops import *
from .loss import *
from .math_extra import *
from .matmul import *
from .misc_extra import *
from .normalization import *
from .pool import *
from .random_draws import *
from .reduce import *
from .reduce_extra import *
from .removed import *
from .rounding import *
from .sampling import *
from .search import *
from .shape import *
from .shape_extra import *
from .softmax import *
from .sort import *
from .sparse_compressed import *
from .sparse_coo import *
from .special_functions import *
from .spectral import *
from .stats import *
from .strided import *
from .tensor_aliases import *
from .tensor_compat import *
from .tensor_methods import *
from .tensor_products import *
from .tensor_storage import *
from .view_copies import *

# What ``from shardflow.ops import *`` (the top-level package) takes: the ops, not this
# package's submodules (``shardflow.sparse_coo`` is the layout, not ``ops/sparse_coo.py``).
__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and type(_v).__name__ != "module"]

from . import _op_namespace


def __getattr__(name):
    """``torch.ops.<namespace>`` (``shardflow.ops.aten``, ``shardflow.ops.mylib``): see
    ``_op_namespace.py``."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _op_namespace.namespace(name)
