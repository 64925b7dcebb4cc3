"""Fused CuPy kernels for the GPU: one launch where the array-module path launches 7-15.

On a GPU the NumPy-style code of an op runs each ufunc as its own kernel, with a few µs of
Python and launch cost each and a full pass over memory: AdamW's update is about 12 launches
per parameter, GELU's backward 15 (docs/GPU.md, "where the GPU time goes"). These
``cupy.ElementwiseKernel`` s do the same arithmetic in one pass per element:

| kernel | replaces |
|---|---|
| ``adam_update`` | ``optim/adam.py``'s ``_adam_update`` (+ the L2/maximize gradient), amsgrad too |
| ``gelu_forward`` / ``gelu_backward`` | ``ops/elementwise.py``'s GELU (exact erf and tanh) |
| ``layer_norm_forward`` / ``layer_norm_backward`` | ``ops/normalization.py``'s LayerNorm (a ``RawModule``: one block per row) |

Who takes them: ``usable(*arrays)`` is true when the kernels are on (``SHARDFLOW_KERNELS``
other than ``numpy``), every array is a C-contiguous float32/float64 array of one dtype, and
the array module is CuPy with ``ElementwiseKernel`` (so never on NumPy arrays nor on the host
stand-in of ``tests/doubles``, which has no kernels). The formulas are those of the NumPy
path term for term; ``tests/gpu/test_cuda_kernels.py`` checks them against the CPU.
Kernels are built lazily, once per process (CuPy caches the compiled code on disk).
"""

from __future__ import annotations

import sys

import numpy as np

from .. import _config

__all__ = ["usable", "adam_update", "gelu_forward", "gelu_backward", "layer_norm_forward", "layer_norm_backward"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BUILT: dict = {}

_ADAM = """
T gg = l2 != (T)0 ? sign * g + l2 * param : sign * g;
param = param * decay;
m = m + one_minus_b1 * (gg - m);
v = b2 * v + one_minus_b2 * gg * gg;
{amsgrad}
T denom = sqrt({second}) / bc2_sqrt + eps;
param = param - step_size * (m / denom);
"""

_GELU_TANH_FWD = "T t = tanh(x * ((T)C + (T)C * (T)A * x * x)); y = (T)0.5 * x * ((T)1 + t);"
_GELU_TANH_BWD = """
T t = tanh(x * ((T)C + (T)C * (T)A * x * x));
T k = (T)0.5 * (T)C * x * ((T)1 + (T)3 * (T)A * x * x);
gx = g * (k * ((T)1 - t * t) + (T)0.5 * (t + (T)1));
"""
_GELU_ERF_FWD = "y = x * (T)0.5 * ((T)1 + erf(x * (T)R));"
_GELU_ERF_BWD = "gx = g * ((T)0.5 * ((T)1 + erf(x * (T)R)) + x * exp((T)-0.5 * x * x) * (T)P);"
_GELU_DEFINES = {"C": "0.7978845608028654", "A": "0.044715", "R": "0.7071067811865476",
                 "P": "0.3989422804014327"}  # sqrt(2/pi), 0.044715, 1/sqrt(2), 1/sqrt(2 pi)


def usable(*arrays) -> bool:
    """True when the fused CuPy kernels can run on these arrays (None entries skipped)."""
    a0 = arrays[0]
    if a0 is None or type(a0) is np.ndarray or type(a0).__module__.split(".")[0] != "cupy":
        return False  # NumPy, or an array module that is not CuPy (tests/doubles' stand-in)
    if a0.dtype not in _FLOATS:
        return False
    for a in arrays:
        if a is None:
            continue
        if type(a) is not type(a0) or a.dtype != a0.dtype or not a.flags.c_contiguous:
            return False
    return _config.kernels_mode() != "numpy"


def get_array_module(_a):
    """CuPy itself: ``usable`` admitted only its arrays, so it is imported (kernels/ sits
    beside backend/ and does not import it)."""
    return sys.modules["cupy"]


def _kernel(xp, name, in_params, out_params, body):
    k = _BUILT.get(name)
    if k is None:
        for key, value in _GELU_DEFINES.items():
            body = body.replace(f"(T){key}", f"(T){value}")
        k = _BUILT[name] = xp.ElementwiseKernel(in_params, out_params, body, f"shardflow_{name}")
    return k


def adam_update(x, g, m, v, vmax, *, maximize, l2, b1, b2, eps, bc1, bc2_sqrt, lr, decay) -> None:
    """One Adam(W) step in place on device arrays (the same arguments as the Numba kernel,
    ``kernels/optim.py``): ``decay`` is AdamW's ``1 - lr * wd``, ``l2`` Adam's penalty."""
    xp = get_array_module(x)
    scalars = "T sign, T l2, T decay, T one_minus_b1, T b2, T one_minus_b2, T bc2_sqrt, T eps, T step_size"
    args = (-1.0 if maximize else 1.0, l2, decay, 1.0 - b1, b2, 1.0 - b2, bc2_sqrt, eps, lr / bc1)
    if vmax is None:
        body = _ADAM.format(amsgrad="", second="v")
        _kernel(xp, "adam", "T g, " + scalars, "T param, T m, T v", body)(g, *args, x, m, v)
    else:
        body = _ADAM.format(amsgrad="vmax = max(vmax, v);", second="vmax")
        _kernel(xp, "adam_amsgrad", "T g, " + scalars, "T param, T m, T v, T vmax", body)(g, *args, x, m, v, vmax)


def gelu_forward(x, approximate: str):
    """GELU of a device array, one launch (``approximate``: ``'none'`` or ``'tanh'``)."""
    xp = get_array_module(x)
    if approximate == "tanh":
        return _kernel(xp, "gelu_tanh_fwd", "T x", "T y", _GELU_TANH_FWD)(x)
    return _kernel(xp, "gelu_erf_fwd", "T x", "T y", _GELU_ERF_FWD)(x)


def gelu_backward(x, g, approximate: str):
    """GELU's input gradient ``g * gelu'(x)``, one launch."""
    xp = get_array_module(x)
    if approximate == "tanh":
        return _kernel(xp, "gelu_tanh_bwd", "T x, T g", "T gx", _GELU_TANH_BWD)(x, g)
    return _kernel(xp, "gelu_erf_bwd", "T x, T g", "T gx", _GELU_ERF_BWD)(x, g)


# ---------------------------------------------------------------------------- LayerNorm
# One thread block per row (blockDim 256): the row's sum, then its centred sum of squares,
# reduced in shared memory (two passes over the row, as the NumPy path's mean then variance);
# backward's per-row sums likewise; gw/gb are column sums: one thread per column and chunk of
# rows (up to 64 chunks, so a (4096, 768) gradient runs 192 blocks, not 3), then one sum over
# the chunks (deterministic; coalesced across the threads of a warp).
_LN_THREADS = 256
_LN_CHUNKS = 64
_LN_SOURCE = r"""
__device__ T block_sum(T v, T* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    T total = sh[0];
    __syncthreads();
    return total;
}

extern "C" __global__ void ln_fwd(const T* x, const T* w, const T* b, T* y, T* mu, T* rstd,
                                  int D, T eps, int has_w, int has_b) {
    __shared__ T sh[THREADS];
    const T* xr = x + (size_t)blockIdx.x * D;
    T* yr = y + (size_t)blockIdx.x * D;
    T s = 0;
    for (int i = threadIdx.x; i < D; i += blockDim.x) s += xr[i];
    T m = block_sum(s, sh) / (T)D;
    T q = 0;
    for (int i = threadIdx.x; i < D; i += blockDim.x) { T d = xr[i] - m; q += d * d; }
    T r = (T)1 / sqrt(block_sum(q, sh) / (T)D + eps);
    if (threadIdx.x == 0) { mu[blockIdx.x] = m; rstd[blockIdx.x] = r; }
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        T v = (xr[i] - m) * r;
        if (has_w) v *= w[i];
        if (has_b) v += b[i];
        yr[i] = v;
    }
}

extern "C" __global__ void ln_bwd_x(const T* gy, const T* x, const T* mu, const T* rstd,
                                    const T* w, T* gx, int D, int has_w) {
    __shared__ T sh[THREADS];
    size_t off = (size_t)blockIdx.x * D;
    T m = mu[blockIdx.x], r = rstd[blockIdx.x];
    T a = 0, c = 0;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        T gh = has_w ? gy[off + i] * w[i] : gy[off + i];
        a += gh;
        c += gh * (x[off + i] - m) * r;
    }
    a = block_sum(a, sh) / (T)D;
    c = block_sum(c, sh) / (T)D;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        T gh = has_w ? gy[off + i] * w[i] : gy[off + i];
        gx[off + i] = r * (gh - a - (x[off + i] - m) * r * c);
    }
}

extern "C" __global__ void ln_bwd_wb(const T* gy, const T* x, const T* mu, const T* rstd,
                                     T* gw, T* gb, int M, int D, int rows_per_chunk) {
    // partial column sums of chunk blockIdx.y into row blockIdx.y of gw/gb (chunks, D)
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= D) return;
    int start = blockIdx.y * rows_per_chunk;
    int stop = min(M, start + rows_per_chunk);
    T sw = 0, sb = 0;
    for (int row = start; row < stop; ++row) {
        T g = gy[(size_t)row * D + j];
        sw += g * (x[(size_t)row * D + j] - mu[row]) * rstd[row];
        sb += g;
    }
    gw[(size_t)blockIdx.y * D + j] = sw;
    gb[(size_t)blockIdx.y * D + j] = sb;
}
"""


def _ln_module(xp, dtype):
    key = ("layer_norm", dtype.name)
    mod = _BUILT.get(key)
    if mod is None:
        ctype = "float" if dtype == np.float32 else "double"
        code = f"#define THREADS {_LN_THREADS}\ntypedef {ctype} T;\n" + _LN_SOURCE
        mod = _BUILT[key] = xp.RawModule(code=code)
    return mod


def layer_norm_forward(x2, w2, b2, eps):
    """(y, mean, rstd) of the rows of the device array ``x2`` (M, D), one launch."""
    xp = get_array_module(x2)
    M, D = x2.shape
    y = xp.empty_like(x2)
    mu = xp.empty(M, x2.dtype)
    rstd = xp.empty(M, x2.dtype)
    dummy = x2  # never read when has_w / has_b is 0
    if M:
        _ln_module(xp, x2.dtype).get_function("ln_fwd")(
            (M,), (_LN_THREADS,),
            (x2, dummy if w2 is None else w2, dummy if b2 is None else b2, y, mu, rstd,
             np.int32(D), x2.dtype.type(eps), np.int32(w2 is not None), np.int32(b2 is not None)))
    return y, mu, rstd


def layer_norm_backward(gy, x2, mu, rstd, w2, need_x):
    """(gx or None, gw, gb) of LayerNorm for the device arrays of ``layer_norm_forward``."""
    xp = get_array_module(x2)
    M, D = x2.shape
    mod = _ln_module(xp, x2.dtype)
    gx = xp.empty_like(x2) if need_x else None
    chunks = min(M, _LN_CHUNKS)  # column sums in row chunks: enough blocks to fill the GPU
    rows_per_chunk = -(-M // max(chunks, 1))
    chunks = -(-M // rows_per_chunk) if M else 0
    gw_part = xp.zeros((chunks, D), x2.dtype)
    gb_part = xp.zeros((chunks, D), x2.dtype)
    if M:
        if need_x:
            mod.get_function("ln_bwd_x")(
                (M,), (_LN_THREADS,),
                (gy, x2, mu, rstd, x2 if w2 is None else w2, gx, np.int32(D), np.int32(w2 is not None)))
        mod.get_function("ln_bwd_wb")(
            ((D + _LN_THREADS - 1) // _LN_THREADS, chunks), (_LN_THREADS,),
            (gy, x2, mu, rstd, gw_part, gb_part, np.int32(M), np.int32(D), np.int32(rows_per_chunk)))
    return gx, gw_part.sum(axis=0), gb_part.sum(axis=0)
