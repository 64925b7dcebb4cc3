"""Specs for the ops the fused Numba kernels take (``shardflow/kernels``), with many rows so
that the rows are split over every thread and each thread gets a ragged share: softmax,
log_softmax, cross-entropy (plain, class weights, ignore_index, reduction='none'),
LayerNorm without affine, and causal attention with more keys than queries (the kernel's
per-row key limit). GELU, LayerNorm with affine and square SDPA with many rows are in
``blocked.py``. The finite differences check a few elements per input (``fd_elements``).
With ``SHARDFLOW_KERNELS=numpy`` the same specs check the NumPy path.
"""

import numpy as np

from shardflow.testing.opspec import Arg, OpSpec


def _F(m):
    return m.nn.functional if m.__name__ == "torch" else m


ROWS = 1031  # prime: no thread count divides it


def _ce_ignore_many(m, x):
    t = np.random.default_rng(3).integers(0, x.shape[1], x.shape[0])
    t[::7] = -100
    return _F(m).cross_entropy(x, m.tensor(t))


SPECS = [
    OpSpec("kernel_softmax_rows", lambda m, x: _F(m).softmax(x, dim=-1), [Arg((ROWS, 40))],
           fd_elements=5),
    OpSpec("kernel_softmax_3d", lambda m, x: _F(m).softmax(x * 4, dim=2), [Arg((7, 150, 33))],
           fd_elements=5),
    OpSpec("kernel_log_softmax_rows", lambda m, x: _F(m).log_softmax(x, dim=1), [Arg((ROWS, 40))],
           fd_elements=5),
    OpSpec("kernel_cross_entropy_rows", lambda m, x, t: _F(m).cross_entropy(x, t),
           [Arg((ROWS, 37)), Arg((ROWS,), kind="index", high=37)], fd_elements=5),
    OpSpec("kernel_cross_entropy_weight", lambda m, x, t, w: _F(m).cross_entropy(x, t, weight=w),
           [Arg((ROWS, 37)), Arg((ROWS,), kind="index", high=37), Arg((37,), kind="positive", grad=False)],
           fd_elements=5),
    OpSpec("kernel_cross_entropy_none", lambda m, x, t: _F(m).cross_entropy(x, t, reduction="none"),
           [Arg((ROWS, 37)), Arg((ROWS,), kind="index", high=37)], fd_elements=5),
    OpSpec("kernel_cross_entropy_ignore", _ce_ignore_many, [Arg((ROWS, 37))], fd_elements=5),
    OpSpec("kernel_layer_norm_no_affine", lambda m, x: _F(m).layer_norm(x, (48,)), [Arg((ROWS, 48))],
           atol=1e-4, fd_elements=5),
    OpSpec("kernel_sdpa_causal_more_keys",
           lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
           [Arg((2, 3, 40, 8)), Arg((2, 3, 70, 8)), Arg((2, 3, 70, 8))], atol=1e-4, fd_elements=4),
]
