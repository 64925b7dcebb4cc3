"""``torch.masked``'s reductions and normalizations on a plain tensor with a boolean ``mask``.

Algorithm (PyTorch's ``torch/masked/_ops.py``, strided layout): the mask is broadcast to the
input's shape and turned to bool; every masked-out element is replaced by the *identity* of the
operation (``where(mask, input, identity)``: 0 for sum/cumsum/norm, 1 for prod/cumprod, -inf
(or the dtype's minimum) for amax/argmax/logsumexp/logaddexp and the softmax family, +inf (or the
dtype's maximum) for amin/argmin/softmin and ``norm(ord=-inf)``, NaN for median (computed with
``nanmedian``)), then the ordinary op runs. So a fully masked-out slice gives the identity
(``sum`` 0, ``amax`` -inf, ``softmax`` NaN), and mean/var/std divide by the count of masked-in
elements (0/0 = NaN there), as PyTorch's. Everything is built from differentiable ops, so
gradients flow to the masked-in elements and are zero on the masked-out ones.

A ``MaskedTensor`` given as ``input`` brings its own mask (the ``mask`` argument is then ignored,
as in PyTorch); the result is a plain tensor. Differences from PyTorch: strided (dense) inputs only.
"""

from __future__ import annotations

import math

from .. import ops
from ..autograd import Tensor
from ..backend import dtypes
from ..backend.info import iinfo

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean",
           "median", "logsumexp", "logaddexp", "norm", "var", "std", "softmax", "log_softmax",
           "softmin", "normalize"]

_builtin_sum = sum
# integer inputs that sum/prod promote to int64 (PyTorch's rule)
_SMALL_INTEGERS = (dtypes.uint8, dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32)


def _is_masked(obj) -> bool:
    return getattr(obj, "_is_shardflow_masked_tensor", False)


def _unwrap(input, mask):
    """(data tensor, mask) where a MaskedTensor input supplies its own mask."""
    if _is_masked(input):
        return input.get_data(), input.get_mask()
    if not isinstance(input, Tensor):
        raise TypeError(f"torch.masked: expected input to be a Tensor or MaskedTensor, "
                        f"got {type(input).__name__}")
    return input, mask


def _is_float(dtype) -> bool:
    return dtype.is_floating_point


def _reduction_identity(op_name: str, input: Tensor, *args):
    """The value v with op(v, x) == x, as a 0-d tensor of input's dtype (None: undefined)."""
    dtype = input.dtype
    if op_name in ("sum", "cumsum"):
        return ops.tensor(0, dtype=dtype, device=input.device)
    if op_name in ("prod", "cumprod"):
        return ops.tensor(1, dtype=dtype, device=input.device)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if _is_float(dtype) or dtype.is_complex:
            return ops.tensor(-math.inf, dtype=dtype, device=input.device)
        if dtype != dtypes.bool_:
            return ops.tensor(iinfo(dtype).min, dtype=dtype, device=input.device)
    elif op_name in ("amin", "argmin"):
        if _is_float(dtype):
            return ops.tensor(math.inf, dtype=dtype, device=input.device)
        if dtype != dtypes.bool_:
            return ops.tensor(iinfo(dtype).max, dtype=dtype, device=input.device)
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == -math.inf:
            return ops.tensor(math.inf, dtype=dtype, device=input.device)
        return ops.tensor(0, dtype=dtype, device=input.device)
    elif op_name == "median":
        return ops.tensor(math.nan, dtype=dtype if _is_float(dtype) else dtypes.float32,
                          device=input.device)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _canonical_dim(dim, ndim: int) -> tuple[int, ...]:
    """dim as a sorted tuple of non-negative dims (None or () -> all dims)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims: list[int] = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input: Tensor, mask) -> Tensor:
    """The mask broadcast to input's shape, as bool."""
    if not isinstance(mask, Tensor):
        mask = ops.tensor(mask)
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = ops.broadcast_to(mask, tuple(input.shape))
    return mask.to(dtype=dtypes.bool_)


def _combine_input_and_mask(op_name: str, input, mask, *args) -> Tensor:
    """input with its masked-out elements replaced by op's identity (input as is without mask)."""
    data, mask = _unwrap(input, mask)
    if mask is None:
        return data
    fill = _reduction_identity(op_name, data, *args)
    return ops.where(_input_mask(data, mask), data, fill)


def _int64_for_small_integers(input, dtype):
    if dtype is not None:
        return dtype
    return dtypes.int64 if input.dtype in _SMALL_INTEGERS else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """Sum of the masked-in elements over ``dim`` (all dims by default); identity 0."""
    dtype = _int64_for_small_integers(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    return ops.sum(_combine_input_and_mask("sum", input, mask), dim_, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """Product of the masked-in elements over ``dim``; identity 1."""
    dtype = _int64_for_small_integers(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask("prod", input, mask).to(dtype=dtype)
    for d in reversed(dim_):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None) -> Tensor:
    """Cumulative sum along ``dim``, masked-out elements counting as 0."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return ops.cumsum(_combine_input_and_mask("sum", input, mask), dim_, dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None) -> Tensor:
    """Cumulative product along ``dim``, masked-out elements counting as 1."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return ops.cumprod(_combine_input_and_mask("prod", input, mask), dim_, dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """Maximum of the masked-in elements; identity -inf (integers: the dtype's minimum)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("amax", input, mask)
    return ops.amax(masked, _canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """Minimum of the masked-in elements; identity +inf (integers: the dtype's maximum)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("amin", input, mask)
    return ops.amin(masked, _canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """Index of the masked-in maximum, cast to ``dtype`` (default: input's dtype, as PyTorch)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("argmax", input, mask)
    return ops.argmax(masked, dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """Index of the masked-in minimum, cast to ``dtype`` (default: input's dtype, as PyTorch)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("argmin", input, mask)
    return ops.argmin(masked, dim, bool(keepdim)).to(dtype=dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """masked sum / count of masked-in elements (NaN where none is masked in)."""
    dtype_source = "Optional"
    if dtype is None:
        dtype, dtype_source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {dtype_source} dtype must be "
                         f"either a floating point or complex dtype. Got: {dtype}")
    data, mask = _unwrap(input, mask)
    if mask is None:
        count = sum(ops.ones(tuple(data.shape), dtype=dtypes.int64, device=data.device), dim,
                    keepdim=keepdim)
        total = sum(data, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(data, mask)
        count = inmask.sum(dim=_canonical_dim(dim, data.ndim), keepdim=bool(keepdim))
        total = sum(data, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """nanmedian of the input with masked-out elements set to NaN (NaN where all are masked)."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    data, mask = _unwrap(input, mask)
    is_float = _is_float(data.dtype)
    if not is_float:
        data = data.to(dtype=dtypes.float32)
    output = ops.nanmedian(_combine_input_and_mask("median", data, mask), dim_, keepdim).values
    if is_float:
        return output
    if not bool(ops.isnan(output).any()):
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """log(sum(exp)) of the masked-in elements (-inf where none is masked in)."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)
    masked = _combine_input_and_mask("logsumexp", input, mask)
    return ops.logsumexp(masked, dim_, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None) -> Tensor:
    """Elementwise log(exp(input) + exp(other)), each side's masked-out elements set to -inf."""
    dtype = input.dtype if dtype is None else dtype
    a = _combine_input_and_mask("logaddexp", input, input_mask)
    b = _combine_input_and_mask("logaddexp", other, other_mask)
    return ops.logaddexp(a, b).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor:
    """Vector norm of the masked-in elements (masked-out ones count as 0; +inf for ord=-inf)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("norm", input, mask, ord)
    dim_ = _canonical_dim(dim, input.ndim)
    return ops.vector_norm(masked, ord, dim_, bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, *, correction_opt, keepdim, dtype, mask, take_sqrt):
    """sum((x - masked mean)^2 over masked-in) / max(count - correction, 0)."""
    if unbiased is not None and correction_opt is not None:
        raise ValueError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = dtypes.float32
    compute_dtype = dtype if (dtype.is_floating_point or dtype.is_complex) else dtypes.float32
    data, mask = _unwrap(input, mask)
    dims = _canonical_dim(dim, data.ndim)
    if mask is None:
        inmask = None
        count = sum(ops.ones(tuple(data.shape), dtype=dtypes.int64, device=data.device), dim,
                    keepdim=True)
    else:
        inmask = _input_mask(data, mask)
        count = inmask.sum(dim=dims, keepdim=True)
    sample_mean = ops.divide(sum(data, dim, keepdim=True, dtype=dtype, mask=inmask), count)
    x = ops.subtract(data, sample_mean)
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if correction != 0:
        count = count.to(dtype=compute_dtype)
        count = ops.maximum(ops.subtract(count, correction), count.new_zeros([]))
    output = ops.divide(total, count).to(dtype=dtype)
    return ops.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None) -> Tensor:
    """Variance of the masked-in elements (NaN where none, or too few, are masked in)."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None) -> Tensor:
    """Standard deviation of the masked-in elements (sqrt of ``var``)."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=True)


def softmax(input, dim, *, dtype=None, mask=None) -> Tensor:
    """softmax with masked-out elements at -inf (so 0; a fully masked slice gives NaN)."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return ops.softmax(_combine_input_and_mask("amax", input, mask), dim_, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None) -> Tensor:
    """log_softmax with masked-out elements at -inf (so -inf; a fully masked slice gives NaN)."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return ops.log_softmax(_combine_input_and_mask("amax", input, mask), dim_, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None) -> Tensor:
    """softmax(-x) with masked-out elements at +inf (so 0; a fully masked slice gives NaN)."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return ops.softmax(-_combine_input_and_mask("amin", input, mask), dim_, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None) -> Tensor:
    """input (masked-out elements 0) / max(masked norm over dim, eps)."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = ops.maximum(nrm, nrm.new_full([], eps))
    return ops.divide(masked, denom)


del _builtin_sum
