"""Parameter initialisation (``torch.nn.init``): every function fills its tensor in place,
without recording autograd, from shardflow's default generator (so ``shardflow.manual_seed``
makes it reproducible; pass ``generator=`` for a private stream), and returns the tensor.

The draws are torch's (``backend/random_stream.py``) and each function draws as torch's does
(``uniform_``/``normal_`` of the whole tensor; ``trunc_normal_`` a uniform, ``erfinv``, scale,
shift and clamp; ``orthogonal_`` a normal matrix's QR; ``sparse_`` a normal fill then a
``randperm`` per column), so a model built after ``manual_seed(s)`` has torch's weights
(float32 to within the last bit of a normal draw).

Fans follow PyTorch: for a weight of shape ``(out, in, *k)``, ``fan_in = in * prod(k)`` and
``fan_out = out * prod(k)``.

On a meta tensor (``backend/meta.py``: shape and dtype, no data) every fill returns the
tensor unchanged and draws nothing, as in PyTorch, so a module built under
``with device("meta")`` runs its ``reset_parameters()``.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from ..autograd import Tensor
from ..backend import CPU, device_of, to_device
from ..backend import random as _random
from ..backend import random_stream as _stream
from ..backend.meta import is_meta_array

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_",
    "orthogonal_", "sparse_", "uniform", "normal", "constant", "xavier_uniform", "xavier_normal",
    "kaiming_uniform", "kaiming_normal", "orthogonal", "eye", "dirac", "sparse",
]


def _skip_meta(fill):
    """A fill that returns a meta tensor unchanged (no data to fill, nothing drawn)."""

    @functools.wraps(fill)
    def run(tensor, *args, **kwargs):
        if isinstance(tensor, Tensor) and is_meta_array(tensor.array):
            return tensor
        return fill(tensor, *args, **kwargs)

    return run


def _warn_zero_element() -> None:
    # torch's kaiming_uniform_ / kaiming_normal_ warn (every call) for a tensor with a 0 in
    # its shape, e.g. the Linear(in, 0) an AdaptiveLogSoftmaxWithLoss cluster gets when
    # in_features // div_value ** i is 0; at the init's caller: past this, the init, _skip_meta
    warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=4)


def _check(tensor, fn: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn} expects a shardflow Tensor, got {type(tensor).__name__}")


def _write(tensor: Tensor, values) -> Tensor:
    """Write host ``values`` into ``tensor``'s array in place and bump its version."""
    dst = tensor.array
    values = _stream.cast(values, dst.dtype)
    if device_of(dst).type != "cpu":
        values = to_device(values, device_of(dst))
    dst[...] = values
    tensor._version_counter[0] += 1
    return tensor


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int | float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        f"Unsupported nonlinearity {nonlinearity}; expected one of linear, conv*, sigmoid, tanh, "
        "relu, leaky_relu, selu"
    )


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(got shape {shape})"
        )
    receptive = 1
    for s in shape[2:]:
        receptive *= s
    return shape[1] * receptive, shape[0] * receptive


def _calculate_correct_fan(tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _draw_into(tensor: Tensor, draw) -> Tensor:
    """Fill ``tensor`` with ``draw(out)`` (``random_stream.draw_into``: straight into a
    contiguous host array, the peak staying the tensor plus a ~1 MB chunk)."""
    _stream.draw_into(tensor.array, draw)
    tensor._version_counter[0] += 1
    return tensor


def _fill_values(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Write ``values`` (flat, in the order torch's kernel visits the tensor) in place."""
    return _draw_into(tensor, lambda out: values)


def _contiguous(tensor: Tensor) -> bool:
    return bool(tensor.array.flags.c_contiguous)


@_skip_meta
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b) (``tensor.uniform_(a, b)``)."""
    _check(tensor, "uniform_")
    gen, n, dt = _random.get(generator), tensor.array.size, tensor.array.dtype
    return _draw_into(tensor, lambda out: _stream.uniform(gen, n, a, b, dt, out))


@_skip_meta
def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) (``tensor.normal_(mean, std)``)."""
    _check(tensor, "normal_")
    gen, n, dt, contiguous = _random.get(generator), tensor.array.size, tensor.array.dtype, _contiguous(tensor)
    return _draw_into(tensor, lambda out: _stream.normal(gen, n, mean, std, dt, contiguous, out))


@_skip_meta
def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) truncated to ``[a, b]``, by torch 2.13's rejection sampling:
    when ``[a, b]`` holds more than 30% of the mass, whole-tensor normal draws replace the
    values outside it until none are left; otherwise uniform candidates on ``[a, b]`` are
    accepted where ``log(U) <= -((x - mean) / std)^2 / 2 - log_peak`` (redrawn where not)."""
    _check(tensor, "trunc_normal_")
    if tensor.array.dtype.kind == "c":  # torch's bounds check has no complex kernel
        name = "ComplexDouble" if tensor.array.dtype == np.complex128 else "ComplexFloat"
        raise NotImplementedError(f"\"lt_cpu\" not implemented for '{name}'")
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution "
                      "of values may be incorrect.", stacklevel=2)
    if a > b:  # torch's uniform_ candidate draw on [a, b] refuses it (the values were filled regardless)
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}: "
                           f"trunc_normal_ needs a <= b")

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    gen, n, dt = _random.get(generator), tensor.array.size, tensor.array.dtype
    work = np.float64 if dt == np.float64 else np.float32  # the tensor's own arithmetic
    contiguous = _contiguous(tensor)
    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        lo, hi = work(a), work(b)
        result = _stream.normal(gen, n, mean, std, dt, contiguous=contiguous).astype(work)
        while True:
            bad = (result < lo) | (result > hi)
            if not bad.any():
                break
            result = np.where(bad, _stream.normal(gen, n, mean, std, dt, contiguous=contiguous).astype(work), result)
        return _fill_values(tensor, result)
    mode = max(a, min(mean, b))
    log_peak = work(-0.5 * ((mode - mean) / std) ** 2)

    def log_pdf(x):  # (x - mean) / std, squared, times -1/2, minus the peak: the tensor ops' roundings
        y = ((x - work(mean)).astype(work) / work(std)).astype(work)
        return ((y * y).astype(work) * work(-0.5) - log_peak).astype(work)

    def accept_draw():
        return np.log(_stream.uniform(gen, n, 0.0, 1.0, dt).astype(work))

    result = _stream.uniform(gen, n, a, b, dt).astype(work)
    pending = accept_draw() > log_pdf(result)
    while pending.any():
        candidates = _stream.uniform(gen, n, a, b, dt).astype(work)
        result = np.where(pending, candidates, result)
        pending = np.where(pending, accept_draw() > log_pdf(candidates), pending)
    return _fill_values(tensor, result)


@_skip_meta
def constant_(tensor: Tensor, val: float) -> Tensor:
    _check(tensor, "constant_")
    tensor.array[...] = val
    tensor._version_counter[0] += 1
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


@_skip_meta
def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (rectangular allowed)."""
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}")
    return _write(tensor, np.eye(*tensor.array.shape))


@_skip_meta
def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D conv weight with the Dirac delta (identity convolution per group)."""
    _check(tensor, "dirac_")
    shape = tuple(tensor.shape)
    if len(shape) not in (3, 4, 5):
        raise ValueError(f"Only tensors with 3, 4, or 5 dimensions are supported, got {shape}")
    if shape[0] % groups != 0:
        raise ValueError(f"dim 0 ({shape[0]}) must be divisible by groups ({groups})")
    out_per_group = shape[0] // groups
    min_dim = min(out_per_group, shape[1])
    v = np.zeros(shape)
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min_dim):
            v[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, v)


@_skip_meta
def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


@_skip_meta
def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


@_skip_meta
def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """U(-bound, bound) with ``bound = gain(nonlinearity, a) * sqrt(3 / fan_mode)`` (He et al.)."""
    _check(tensor, "kaiming_uniform_")
    if 0 in tuple(tensor.shape):
        _warn_zero_element()
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


@_skip_meta
def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """N(0, std^2) with ``std = gain(nonlinearity, a) / sqrt(fan_mode)``."""
    _check(tensor, "kaiming_normal_")
    if 0 in tuple(tensor.shape):
        _warn_zero_element()
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


@_skip_meta
def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian matrix, with the
    signs of R's diagonal folded into Q so the result is uniformly distributed (Saxe et al.)."""
    _check(tensor, "orthogonal_")
    if tensor.array.dtype.kind == "c":  # torch fails on sign(diag(R)) of the complex QR
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead.")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    dt = np.float64 if tensor.array.dtype == np.float64 else np.float32
    flat = _stream.normal(_random.get(generator), rows * cols, 0.0, 1.0, dt).astype(dt).reshape(rows, cols)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(tensor.array.shape))


@_skip_meta
def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """2-D tensor: N(0, std^2) with a fraction ``sparsity`` of each column set to zero
    (torch's order: the normal fill, then one ``randperm(rows)`` per column from the default
    generator, as torch's draws them)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    normal_(tensor, 0.0, std, generator)
    v = np.array(to_device(tensor.array, CPU), copy=True)
    nz = int(math.ceil(sparsity * rows))
    for c in range(cols):
        v[_stream.permutation(_random.get(None), rows)[:nz], c] = 0
    return _write(tensor, v)


def _make_deprecate(meth):
    """PyTorch's deprecated non-underscore name of ``meth``: warns (PyTorch's FutureWarning), then
    calls it."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__name__ = old_name
    deprecated_init.__doc__ = f"Deprecated: ``{new_name}``."
    return deprecated_init


# PyTorch's deprecated non-underscore names
uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)


def _no_grad_trunc_normal_(tensor: Tensor, mean: float, std: float, a: float, b: float,
                           generator=None) -> Tensor:
    """PyTorch's private name (imported by timm-style code): ``trunc_normal_``."""
    return trunc_normal_(tensor, mean, std, a, b, generator=generator)
