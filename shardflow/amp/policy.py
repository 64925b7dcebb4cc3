"""Autocast op policy: which ops run in the region's low dtype, which in float32, which at
the widest input dtype — PyTorch's lists (``aten/src/ATen/autocast_mode.cpp``), per device
type, restricted to the ops shardflow registers (names as in ``autograd.dispatch.OPS``).

Kinds
-----
``LOWER``   cast floating inputs (not float64) to the region's dtype (bfloat16/float16):
            the ops whose speed comes from low precision (matmul, linear, conv, SDPA).
``FP32``    cast floating inputs to float32: ops whose range or accuracy needs it
            (losses, exp/log, norms, reductions on CUDA).
``PROMOTE`` cast floating inputs to the widest floating dtype among them (cat, stack ...).
Every other op runs on its inputs as they are (its own type promotion applies).

CPU and CUDA differ, as in PyTorch: on CPU softmax, log_softmax, layer_norm, sum, exp and log
are *not* forced to float32 (a bfloat16 input stays bfloat16; with float32 inputs they
compute in float32 anyway); on CUDA they are. ``tests/test_autocast.py`` checks the CPU
policy op by op against ``torch.autocast('cpu')``.

Composite ops of PyTorch (``einsum``, ``inner``, ``tensordot``) reach ``bmm``/``mm`` inside
PyTorch's autocast and so come out in the low dtype; the same ops are listed ``LOWER``
here because shardflow implements them as single ops.
"""

from __future__ import annotations

LOWER, FP32, PROMOTE = "lower", "fp32", "promote"

_CPU_LOWER = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "bmm", "mm", "baddbmm", "addmm", "linear", "matmul", "scaled_dot_product_attention",
    "einsum", "inner", "addbmm", "prelu", "linalg_vecdot",
)
_CPU_FP32 = (
    "avg_pool3d", "binary_cross_entropy", "prod", "max_pool3d", "adaptive_avg_pool3d",
    "mse_loss", "nll_loss", "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss",
    "kl_div", "binary_cross_entropy_with_logits",
    # linear algebra, FFTs and the rest of PyTorch's CPU fp32 list that shardflow registers
    # (a bfloat16 matrix would be factored in 8-bit precision; torch refuses most of them)
    "cdist", "trace", "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "pinverse",
    "geqrf", "orgqr", "ormqr", "lu_solve", "qr", "svd", "triangular_solve",
    "linalg_inv", "linalg_cholesky", "linalg_cholesky_ex", "linalg_eigh", "linalg_eigvalsh",
    "linalg_eig", "linalg_eigvals", "linalg_svd", "linalg_svdvals", "linalg_qr", "linalg_lstsq",
    "linalg_cond", "linalg_householder_product", "linalg_matrix_rank",
    "fft_fft", "fft_ifft", "fft_rfft", "fft_irfft", "fft_hfft", "fft_ihfft", "fft_fft2",
    "fft_ifft2", "fft_rfft2", "fft_irfft2", "fft_fftn", "fft_ifftn", "fft_rfftn", "fft_irfftn",
    "quantile", "nanquantile", "polar", "grid_sample", "adaptive_max_pool3d", "ctc_loss", "stft",
)
_CPU_PROMOTE = ("cat", "concat", "concatenate", "stack")

_CUDA_LOWER = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "addmm", "matmul", "einsum", "mm", "mv", "linear", "baddbmm", "bmm",
    "scaled_dot_product_attention", "inner",
)
_CUDA_FP32 = (
    "acos", "asin", "cosh", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
    "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "rms_norm",
    "nll_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "binary_cross_entropy_with_logits", "cross_entropy", "logsumexp", "interpolate",
    # fp32_set_opt_dtype in PyTorch (the reduction runs with dtype=float32)
    "prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm", "vector_norm",
    "sum", "norm",
)
_CUDA_PROMOTE = ("addcdiv", "addcmul", "dot", "vdot", "index_put", "scatter_add", "cat",
                 "concat", "concatenate", "stack")
# PyTorch raises for these under CUDA autocast (unsafe in float16); the message is its own.
CUDA_BANNED = {
    "binary_cross_entropy": (
        "shardflow.nn.functional.binary_cross_entropy and shardflow.nn.BCELoss are unsafe to "
        "autocast. Many models use a sigmoid layer right before the binary cross entropy layer. "
        "In this case, combine the two layers using shardflow.nn.functional."
        "binary_cross_entropy_with_logits or shardflow.nn.BCEWithLogitsLoss. "
        "binary_cross_entropy_with_logits and BCEWithLogits are safe to autocast."
    ),
}


def _table(lower, fp32, promote) -> dict[str, str]:
    table = {n: LOWER for n in lower}
    table.update({n: FP32 for n in fp32})
    table.update({n: PROMOTE for n in promote})
    return table


POLICY: dict[str, dict[str, str]] = {
    "cpu": _table(_CPU_LOWER, _CPU_FP32, _CPU_PROMOTE),
    "cuda": _table(_CUDA_LOWER, _CUDA_FP32, _CUDA_PROMOTE),
}
# Every op name some device's policy mentions: the hook's first (cheapest) test.
ANY_POLICY = frozenset(POLICY["cpu"]) | frozenset(POLICY["cuda"]) | frozenset(CUDA_BANNED)


def policy_of(device_type: str, name: str) -> str | None:
    """The kind (``LOWER``/``FP32``/``PROMOTE``) of op ``name`` under ``device_type`` autocast, or None."""
    return POLICY[device_type].get(name)
