"""Specs whose inputs span several blocks of the cache-blocked kernels (``ops/blocked.py``,
64K elements per block) and end in a ragged (shorter) last block: GELU (flat elements),
LayerNorm (blocks of rows), SDPA's blocked path (``ops/attention.py``: blocks of heads of
``_HEAD_BLOCK`` = 256K scores, and within them GEMMs on blocks of query rows and keys that
keep each GEMM within ``_GEMM_MNK`` multiply-adds). The small specs elsewhere fit in one
block and never reach the block boundaries.

Cost: forward and backward are compared with PyTorch on the whole input; the float64
finite differences check ``fd_elements`` elements per input (the first, the last, in the
ragged block, and a seeded random choice), since checking every element of a 150K-element
input would take two forwards per element. ``tests/ops/test_op_coverage.py`` asserts that
these shapes really do span several blocks with a ragged last one.
"""

from shardflow.testing.opspec import Arg, OpSpec

from .kernels import _sdpa_qkv_split  # GPT-mini's attention: heads as views of one projection


def _F(m):
    return m.nn.functional if m.__name__ == "torch" else m


# GELU: 150000 elements = 2 full blocks of 65536 + 18928
GELU_SHAPE = (3, 50000)
# LayerNorm over 64 features: 1024 rows per block; 2500 rows = 1024 + 1024 + 452
LN_SHAPE = (2500, 64)
# SDPA, 2 x 9 heads of 128 x 128 scores: head blocks of one batch entry (9 heads), one row
# block (head size 16); kept from the 64K-element head blocks of the earlier layout
SDPA_SHAPE = (2, 9, 128, 16)
# SDPA with head size 64: GEMM blocks of 32 query rows / keys (ops/attention.py, _GEMM_MNK),
# 20 heads of 128 x 128 scores in head blocks of 16 + 4; causal with more keys than queries
# (keys no row sees) and more queries than keys (ragged 42-row blocks); GPT's fused-qkv layout
# (strided heads in, output and gradients in the (B, T, H, hs) layout)
SDPA_ROWS_SHAPE = (1, 20, 128, 64)


SPECS = [
    OpSpec("blocked_gelu", lambda m, a: _F(m).gelu(a), [Arg(GELU_SHAPE)], fd_elements=4),
    OpSpec("blocked_gelu_tanh", lambda m, a: _F(m).gelu(a, approximate="tanh"), [Arg(GELU_SHAPE)],
           fd_elements=6),
    OpSpec("blocked_layer_norm", lambda m, x, w, b: _F(m).layer_norm(x, (64,), w, b),
           [Arg(LN_SHAPE), Arg((64,)), Arg((64,))], atol=1e-4, fd_elements=6),
    OpSpec("blocked_sdpa", lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v),
           [Arg(SDPA_SHAPE), Arg(SDPA_SHAPE), Arg(SDPA_SHAPE)], atol=1e-4, fd_elements=5),
    OpSpec("blocked_sdpa_causal",
           lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
           [Arg(SDPA_SHAPE), Arg(SDPA_SHAPE), Arg(SDPA_SHAPE)], atol=1e-4, fd_elements=5),
    OpSpec("blocked_sdpa_row_blocks", lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v),
           [Arg(SDPA_ROWS_SHAPE), Arg(SDPA_ROWS_SHAPE), Arg(SDPA_ROWS_SHAPE)], atol=1e-4, fd_elements=5),
    OpSpec("blocked_sdpa_causal_row_blocks",
           lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
           [Arg(SDPA_ROWS_SHAPE), Arg(SDPA_ROWS_SHAPE), Arg(SDPA_ROWS_SHAPE)], atol=1e-4, fd_elements=5),
    OpSpec("blocked_sdpa_causal_more_keys_row_blocks",
           lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
           [Arg((2, 3, 96, 64)), Arg((2, 3, 160, 64)), Arg((2, 3, 160, 64))], atol=1e-4, fd_elements=5),
    OpSpec("blocked_sdpa_causal_more_queries_row_blocks",
           lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, is_causal=True),
           [Arg((2, 3, 160, 64)), Arg((2, 3, 96, 64)), Arg((2, 3, 96, 64))], atol=1e-4, fd_elements=5),
    OpSpec("blocked_sdpa_qkv_split_row_blocks", _sdpa_qkv_split, [Arg((2, 128, 384))], atol=1e-4,
           fd_elements=5),
]
