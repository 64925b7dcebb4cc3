"""Helpers shared by op families: operand promotion, broadcasting-aware gradient reduction,
dim normalisation, and the in-place wrapper."""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd import grad_mode as _gm
from ..autograd.tensor import _as_array
from ..backend import dtypes, from_numpy_dtype, result_type
from ..backend.info import finfo

_SCALARS = (int, float, complex, bool, np.number, np.bool_)
# What ``as_tensor_arg`` turns into a Tensor. A flat tuple: ``isinstance`` takes a tuple of
# types or a ``X | Y`` union, but ``_SCALARS | np.ndarray`` (a tuple or'ed with a type) is a
# TypeError, which made every ``tensor * ndarray`` fail.
_TENSOR_LIKE = (*_SCALARS, np.ndarray, list, tuple)


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape`` (the reverse of NumPy broadcasting)."""
    if g.shape == shape:
        return g
    # float16/bfloat16 summed in float32 and rounded once, as torch's sum_to_size (NumPy adds
    # in the 2-byte dtype: the gradient of a 0-d float32 scale times a bfloat16 activation,
    # modded-nanogpt's lambdas, came out 0 where torch's was 0.0037)
    g, dt = _up(g)
    ndiff = g.ndim - len(shape)
    if ndiff > 0:
        g = g.sum(axis=tuple(range(ndiff)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g if dt is None else as_array(g.astype(dt))


def as_array(r):
    """A result as an array: NumPy gives a scalar for 0-d operands and whole-array reductions
    (a Tensor holds arrays); CuPy gives a 0-d array already."""
    return np.asarray(r) if isinstance(r, np.generic) else r


def as_dtype_of(y, a, b=None):
    """``y``, the result of an op on the array ``a`` (and ``b``: an array or a Python scalar),
    in the dtype PyTorch gives it. The rule for low-precision arrays: NumPy widens an ml_dtypes
    bfloat16 array combined with a Python float (``bf16 + 2.0``), or passed through a
    BLAS/einsum path, to float32, where PyTorch keeps bfloat16 (it computes in float32 too and
    rounds once, which is this cast). A Python scalar never widens the array; an array ``b``
    takes part through ``np.result_type``. float32/float64 results pay one dtype comparison."""
    if y.dtype == a.dtype or a.dtype.kind != "V":
        return y
    want = np.result_type(a.dtype, b.dtype) if hasattr(b, "dtype") else a.dtype
    return y if y.dtype == want else y.astype(want)


def not_a_tensor(what: str, x) -> TypeError:
    """The TypeError for a non-Tensor argument; for a QuantizedTensor (a converted
    quantized model's activations: ``shardflow.quant``, a layer above, duck-typed here) it
    says which layers run on int8 and how to leave the quantized region."""
    msg = f"{what}, got {type(x).__name__}"
    if getattr(x, "is_quantized", False) and not isinstance(x, Tensor):
        msg += ("; this op has no quantized kernel in shardflow (a converted model runs Linear, "
                "Conv2d, their ReLU fusions, ReLU, MaxPool2d, AdaptiveAvgPool2d, Flatten, Dropout, "
                "Identity, ReLU6, Hardswish, FloatFunctional, x.mean and flatten on int8 tensors): put a DeQuantStub before the layer "
                "and a QuantStub after it, or set its qconfig to None (docs/QUANT.md)")
    return TypeError(msg)


def as_tensor_arg(x, name: str = "input") -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _TENSOR_LIKE):
        return _wrap(_as_array(x, None))  # data with tensor()'s dtypes (Tensor(3) would be sizes)
    raise not_a_tensor(f"{name} must be a Tensor or a number", x)


def number_arg(value, op: str, name: str):
    """A ``Scalar`` argument such as ``alpha``: Python numbers pass through; NumPy scalars and
    0-dim tensors that do not require grad become Python numbers (PyTorch accepts both as
    a Scalar); anything else raises PyTorch's TypeError, with the fix."""
    if isinstance(value, Tensor):
        if value.array.ndim == 0 and not value.requires_grad:
            return value.item()
        raise TypeError(
            f"{op}(): argument '{name}' must be Number, not Tensor (got shape "
            f"{tuple(value.shape)}, requires_grad={value.requires_grad}); pass a Python number, "
            f"e.g. {name}=float(t) or {name}=t.item()"
        )
    if isinstance(value, np.generic):
        return value.item()
    return value


def promote(a, b):
    """Return (a, b) ready for a binary op: Tensors cast to the PyTorch result dtype, Python
    scalars left as scalars of that dtype's kind (NumPy then keeps the array's dtype)."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb and a.array.dtype == b.array.dtype:  # the common case first
        return a, b
    # NumPy scalars act as Python numbers (PyTorch: ``t * np.float64(2)`` stays float32);
    # left as they are, NumPy 2 would promote the array to their dtype.
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(b, np.generic):
        b = b.item()
    if ta and tb:
        if a.array.dtype == b.array.dtype:
            return a, b
        rd = result_type([(a.dtype, a.array.ndim), (b.dtype, b.array.ndim)])
        return _cast(a, rd), _cast(b, rd)
    if ta:
        if isinstance(b, np.ndarray):
            return _promote_ndarray(a, b, tensor_first=True)
        if not isinstance(b, _SCALARS):
            return promote(a, as_tensor_arg(b, "other"))
        rd = result_type([(a.dtype, a.array.ndim), b])
        return _cast(a, rd), b
    if tb:
        if isinstance(a, np.ndarray):
            return _promote_ndarray(b, a, tensor_first=False)
        if not isinstance(a, _SCALARS):
            return promote(as_tensor_arg(a, "input"), b)
        rd = result_type([a, (b.dtype, b.array.ndim)])
        return a, _cast(b, rd)
    return as_tensor_arg(a), b


def wrap_int_operand(a, b):
    """``(a, b)`` from :func:`promote` with a Python int operand outside an integer tensor's
    dtype wrapped into it (two's complement), as PyTorch's add/sub/mul cast the scalar:
    ``uint8 tensor + 1000`` adds 232 (NumPy 2 raises OverflowError instead). Beyond int64,
    PyTorch refuses too (``OverflowError``)."""
    if type(b) is int and isinstance(a, Tensor):
        return a, _wrapped(b, a.array.dtype)
    if type(a) is int and isinstance(b, Tensor):
        return _wrapped(a, b.array.dtype), b
    return a, b


def _wrapped(v: int, dt) -> int:
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            return int(np.array(v, dtype=np.int64).astype(dt))
    return v


def _promote_ndarray(t: Tensor, arr: np.ndarray, tensor_first: bool):
    """A Tensor with a NumPy array operand: the result dtype follows NumPy's promotion of the
    two dtypes, which is what PyTorch produces (it computes ``tensor * ndarray`` through
    NumPy and wraps the result: float32 tensor * int32 array -> float64). The array becomes
    a Tensor of that dtype; unlike PyTorch, the result keeps the Tensor's autograd graph."""
    if arr.dtype.kind not in "biufc" and arr.dtype != dtypes.bfloat16.np:
        raise TypeError(
            f"cannot combine a Tensor with a NumPy array of dtype {arr.dtype}; "
            "convert the array to a numeric dtype first"
        )
    rd = from_numpy_dtype(np.result_type(t.array.dtype, arr.dtype))
    other = Tensor(arr if arr.dtype == rd.np else arr.astype(rd.np))
    t = _cast(t, rd)
    return (t, other) if tensor_first else (other, t)


def _cast(t: Tensor, d) -> Tensor:
    if t.array.dtype == d.np:
        return t
    from .conversion import to_dtype

    return to_dtype(t, d)


def wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + ndim if dim < 0 and ndim > 0 else (0 if dim < 0 else dim)


def index_scalar(v):
    """``v`` as torch's int arguments read it: a 0-d integer Tensor (``lengths[0]``,
    ``t.argmax()``) is its int (torch converts through ``__index__``); anything else is
    returned as is."""
    if isinstance(v, Tensor) and v.ndim == 0 and v.array.dtype.kind in "iu":
        return int(v.item())
    return v


def norm_dims(dim, ndim: int):
    """``dim`` argument (None, int, or sequence) -> sorted tuple of non-negative axes or None.
    A 0-d tensor takes dim 0 and -1 (as PyTorch) and reduces its one element: None, since
    NumPy has no axis 0 to name there."""
    if dim is None:
        return None
    dim = index_scalar(dim)
    if isinstance(dim, int | np.integer):
        d = wrap_dim(int(dim), ndim)
        return (d,) if ndim else None
    dims = tuple(sorted(wrap_dim(int(d), ndim) for d in dim))
    if not dims or not ndim:
        return None
    return dims


def ntuple(v, d: int, name: str) -> tuple[int, ...]:
    """A kernel/stride/padding argument (int or sequence) as a tuple of ``d`` ints."""
    if isinstance(v, int | np.integer):
        return (int(v),) * d
    if isinstance(v, str):  # torch's TypeError (int() of each character gave a puzzling ValueError)
        raise TypeError(f"argument '{name}' must be tuple of ints, not str ({v!r})")
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return v * d
    if len(v) != d:
        raise ValueError(f"{name} must be an int or a tuple of {d} ints, got {v}")
    return v


def flush_subnormal_(a):
    """Set the subnormal entries of float array ``a`` to zero, in place, and return ``a``.

    Why: x86 SIMD arithmetic and BLAS kernels run 10-100x slower on subnormal operands (a
    (2048, 256) GEMM measured 1.4 ms normal, 96 ms with half its entries subnormal). Softmax-type
    ops make them: ``exp`` of a score 88+ below the row maximum, or a tiny probability divided
    by the batch size, lands below float32's smallest normal (1.18e-38). A confident classifier
    or a peaked attention row produces thousands of them per step, and every GEMM downstream
    of the gradient slows down. Zeroing them changes values by less than 1.2e-38 (what
    ``torch.set_flush_denormal(True)`` would do) and restores full speed. Only NumPy float32
    and float64 arrays are touched: GPUs flush at full speed already.
    """
    if type(a) is np.ndarray and a.dtype.kind == "f" and a.dtype.itemsize >= 4:
        a[np.abs(a) < np.finfo(a.dtype).tiny] = 0
    return a


def inplace(target: Tensor, result: Tensor) -> Tensor:
    """Finish an in-place op: see ``Tensor._inplace``. A result that ``target`` cannot hold
    (its operands broadcast to a larger shape: ``ones(1).add_(ones(3))``) is torch's
    RuntimeError; NumPy's ValueError leaked before, and a tensor with history silently took
    the larger shape."""
    if result.array.shape != target.array.shape:
        _check_fits(target.array.shape, result.array.shape)
    return target._inplace(result)


def _check_fits(shape: tuple, result_shape: tuple) -> None:
    try:
        fits = np.broadcast_shapes(shape, result_shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape {list(result_shape)}: "
                           f"an in-place op cannot change its tensor's shape; use the out-of-place form (a = a + b)")


def needs_graph(*tensors) -> bool:
    return _gm._state.enabled and any(isinstance(t, Tensor) and t.requires_grad for t in tensors)


def float_dtype_of(t: Tensor):
    """The floating dtype an op like mean/exp produces for ``t`` (ints -> default float)."""
    d = t.dtype
    return d if d.is_floating_point else dtypes.get_default_dtype()


__all__ = ["flush_subnormal_", "unbroadcast", "promote", "wrap_dim", "norm_dims", "inplace", "as_tensor_arg",
           "number_arg", "_wrap", "needs_graph"]


# ---- half precision in the fused ops (softmax.py, loss.py): compute in float32
def _up(a):
    """float16/bfloat16 arrays -> float32 (accumulate in single precision); also the dtype
    to cast results back to (None when no cast is needed)."""
    if a.dtype.itemsize < 4 and a.dtype.kind in "fV":
        return a.astype(np.float32), a.dtype
    return a, None


def _down(a, dt):
    return a if dt is None or a is None else a.astype(dt)


_COMPLEX_SCALAR_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}
CLAMP_COMPLEX = "clamp is not supported for complex types"  # torch's words (relu, hardtanh too)


def refuse_complex(t, *, kernel: str | None = None, message: str | None = None) -> None:
    """torch's ``NotImplementedError`` for a complex tensor given to an op without a complex
    kernel: ``message``, or torch's ``"KERNEL" not implemented for 'ComplexFloat'``. NumPy
    orders complex numbers lexicographically, so without this check such ops (relu,
    softmax, threshold, ...) returned numbers torch never computes."""
    if isinstance(t, Tensor) and t.array.dtype.kind == "c":
        raise NotImplementedError(message or f"\"{kernel}\" not implemented for "
                                  f"'{_COMPLEX_SCALAR_NAMES[t.array.dtype.name]}'")


def refuse_complex_runtime(t, message: str) -> None:
    """torch's ``RuntimeError`` for a complex tensor where its check raises that type (an
    ordering: ``max(dim)``, ``argmax``, ``maximum``, ``sort``, ``topk``)."""
    if isinstance(t, Tensor) and t.array.dtype.kind == "c":
        raise RuntimeError(message)


def _float_input(x: Tensor, name: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        from .conversion import to_dtype

        return to_dtype(x, dtypes.get_default_dtype())
    return x


# ---- small helpers shared by the elementwise op files
def _shape(x):
    return x.shape if hasattr(x, "shape") else ()


_C_TYPE = {"int64": "int64_t", "int32": "int", "int16": "short int", "int8": "int8_t", "uint8": "uint8_t",
           "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "float32": "float", "float64": "double",
           "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def check_fill_value(value, dtype) -> None:
    """PyTorch's overflow check of a Python scalar written into a tensor of NumPy ``dtype``
    (``masked_fill``, ``index_fill``, ...): NaN, inf or an out-of-range number for an integer
    dtype (an unsigned one takes down to -max, wrapping), or a finite number past a float
    dtype's range, raise its RuntimeError instead of writing a wrapped or garbage value."""
    if isinstance(value, bool) or not isinstance(value, int | float) or dtype.kind in "bc":
        return
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = -int(info.max) if dtype.kind == "u" else int(info.min)
        ok = math.isfinite(value) and lo <= value <= int(info.max)
    else:
        ok = not math.isfinite(value) or abs(value) <= float(finfo(from_numpy_dtype(dtype)).max)
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE.get(dtype.name, dtype.name)} without "
                           f"overflow (got {value!r}); pass a value that fits, or cast the tensor first")


def fill_scalar(value, dtype):
    """A Python scalar checked by ``check_fill_value`` for a tensor of NumPy ``dtype``, a
    negative int wrapped for an unsigned dtype as PyTorch does (-1 -> 255 for uint8; NumPy
    would raise OverflowError). Anything else is returned as it is."""
    check_fill_value(value, dtype)
    if dtype.kind == "u" and isinstance(value, int) and not isinstance(value, bool) and value < 0:
        value += 1 << (8 * dtype.itemsize)
    return value


def orderable(a):
    """``a`` in a dtype NumPy orders like PyTorch (NaN last): bfloat16 (ml_dtypes) compares
    NaN as neither smaller nor larger, so NumPy's sort, partition, unique and searchsorted
    mis-order around it; its float32 image is exact. Other arrays are returned as they are."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


def _is_float_array(a) -> bool:
    k = a.dtype.kind
    return k == "f" or k == "V"


def _broadcast_error_named(op, a, b) -> RuntimeError:
    return RuntimeError(
        f"{op}: the size of tensor a {tuple(_shape(a))} must match the size of tensor b "
        f"{tuple(_shape(b))} (they do not broadcast); reshape one of them"
    )
