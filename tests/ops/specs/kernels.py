"""Specs for the ops the fused Numba kernels take (``shardflow/kernels``), with many rows so
that the rows are split over every thread and each thread gets a ragged share: softmax,
log_softmax, cross-entropy (plain, class weights, ignore_index, reduction='none'),
LayerNorm without affine, causal attention with more keys than queries (the kernel's
per-row key limit) and with heads split from one qkv projection (strided views, as in
GPT-mini), and embedding backward with many repeated ids. GELU, LayerNorm with affine and
square SDPA with many rows are in ``blocked.py``. The finite differences check a few elements per input (``fd_elements``).
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


def _sdpa_qkv_split(m, qkv):
    """GPT-mini's attention: q, k, v split from one (B, T, 3C) projection, heads as views."""
    B, T, C3 = qkv.shape
    C, nh = C3 // 3, 2
    q, k, v = (t.reshape(B, T, nh, C // nh).transpose(1, 2) for t in qkv.split(C, dim=2))
    y = _F(m).scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
    return y.transpose(1, 2).reshape(B, T, C)


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
    OpSpec("kernel_sdpa_qkv_split_heads", _sdpa_qkv_split, [Arg((3, 40, 48))], atol=1e-4,
           fd_elements=4),
    # embedding backward (kernels/embedding.py): repeated ids, columns over several blocks
    OpSpec("kernel_embedding_repeated_ids", lambda m, i, w: _F(m).embedding(i, w),
           [Arg((9, 113), kind="index", high=37, grad=False), Arg((37, 70))], fd_elements=5),
]
