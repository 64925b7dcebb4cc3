"""Parameter initialisation (``torch.nn.init``): every function fills its tensor in place,
without recording autograd, from shardflow's default generator (so ``shardflow.manual_seed``
makes it reproducible; pass ``generator=`` for a private stream), and returns the tensor.

Fans follow PyTorch: for a weight of shape ``(out, in, *k)``, ``fan_in = in * prod(k)`` and
``fan_out = out * prod(k)``. ``trunc_normal_`` samples N(mean, std) and redraws the values
outside ``[a, b]`` until none are left (exact truncated normal, no erfinv needed).

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
from ..backend import device_of, to_device
from ..backend import random as _random
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


def _check(tensor, fn: str) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn} expects a shardflow Tensor, got {type(tensor).__name__}")


def _sample_dtype(tensor):
    return np.float64 if tensor.array.dtype == np.float64 else np.float32


def _write(tensor: Tensor, values) -> Tensor:
    """Write host ``values`` into ``tensor``'s array in place and bump its version."""
    dst = tensor.array
    if dst.dtype.kind == "V" and values.dtype != np.float32:  # bfloat16 via float32
        values = values.astype(np.float32)
    values = values.astype(dst.dtype, copy=False)
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


_FILL_CHUNK = 1 << 18  # values drawn at a time when they cannot be drawn into the tensor


def _fill(tensor: Tensor, draw, scale: float, shift: float) -> Tensor:
    """``tensor = draw * scale + shift`` in place, ``draw(shape, dtype, out)`` being one of
    the generator's float32/float64 samplers. A contiguous CPU float32/float64 tensor is
    drawn into directly (no temporary: ``nn.Linear``'s init used to peak at twice the
    weight); any other (half types, a GPU) a chunk at a time through :func:`_write`. The
    values are those of one draw of the whole shape either way."""
    dst, sample = tensor.array, _sample_dtype(tensor)
    if isinstance(dst, np.ndarray) and dst.dtype == sample and dst.flags.c_contiguous:
        draw(dst.shape, sample, dst)
        dst *= scale
        dst += shift
        tensor._version_counter[0] += 1
        return tensor
    flat = dst.reshape(-1)
    for start in range(0, flat.size, _FILL_CHUNK):
        stop = min(start + _FILL_CHUNK, flat.size)
        v = draw((stop - start,), sample, None)
        v *= scale
        v += shift
        _write_flat(flat, start, stop, v)
    tensor._version_counter[0] += 1
    return tensor


def _write_flat(flat, start: int, stop: int, values) -> None:
    """``flat[start:stop] = values`` with ``_write``'s conversions (bfloat16, device)."""
    if flat.dtype.kind == "V" and values.dtype != np.float32:  # bfloat16 via float32
        values = values.astype(np.float32)
    values = values.astype(flat.dtype, copy=False)
    if device_of(flat).type != "cpu":
        values = to_device(values, device_of(flat))
    flat[start:stop] = values


@_skip_meta
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    _check(tensor, "uniform_")
    rng = _random.rng(generator)
    return _fill(tensor, lambda shape, dt, out: rng.random(shape, dtype=dt, out=out), b - a, a)


@_skip_meta
def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    _check(tensor, "normal_")
    rng = _random.rng(generator)
    return _fill(tensor, lambda shape, dt, out: rng.standard_normal(shape, dtype=dt, out=out),
                 std, mean)


@_skip_meta
def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) truncated to ``[a, b]`` (rejection: redraw the outliers)."""
    _check(tensor, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_ needs a < b, got a={a}, b={b}")
    rng = _random.rng(generator)
    v = (rng.standard_normal(tensor.array.shape) * std + mean).reshape(-1)
    bad = np.flatnonzero((v < a) | (v > b))
    tries = 0
    while bad.size:
        v[bad] = rng.standard_normal(bad.size) * std + mean
        bad = bad[(v[bad] < a) | (v[bad] > b)]
        tries += 1
        if tries > 1000:  # [a, b] nearly without mass: clamp the rest
            v[bad] = np.clip(v[bad], a, b)
            break
    return _write(tensor, v.reshape(tensor.array.shape))


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
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


@_skip_meta
def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian matrix, with the
    signs of R's diagonal folded into Q so the result is uniformly distributed (Saxe et al.)."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _random.rng(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(tensor.array.shape))


@_skip_meta
def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """2-D tensor: N(0, std^2) with a fraction ``sparsity`` of each column set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    rng = _random.rng(generator)
    v = rng.standard_normal((rows, cols)) * std
    nz = int(math.ceil(sparsity * rows))
    for c in range(cols):
        v[rng.permutation(rows)[:nz], c] = 0
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
