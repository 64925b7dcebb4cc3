"""Random creation and initialisation do not need a multiple of the tensor's memory (issue
25, gap 7): `randn` / `rand` used to draw float64 and cast (peak 3x a float32 tensor) and
`nn.Linear`'s init drew a temporary as large as the weight (2x), so a model near the memory
limit failed in its initialisation. Now the peak is the tensor plus a few MB, and the
values are torch's (session 30: `backend/random_stream.py`), drawn a chunk at a time."""

import tracemalloc

import numpy as np
import pytest

import shardflow as sf

N = 2048  # a 2048 x 2048 float32 tensor: 16 MB
MB = 1 << 20


def _peak(fn):
    """Peak traced memory (NumPy reports its buffers to tracemalloc) while ``fn`` runs,
    above what was allocated before; and ``fn``'s result."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        return tracemalloc.get_traced_memory()[1] - base, out
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("make", [lambda: sf.randn(N, N), lambda: sf.rand(N, N),
                                  lambda: sf.randn(N, N, dtype=sf.float16)])
def test_rand_and_randn_peak_at_the_tensor_plus_a_chunk(make):
    peak, t = _peak(make)
    size = t.numel() * t.element_size()
    assert peak <= size + 3 * MB, f"peak {peak / MB:.1f} MB for a {size / MB:.0f} MB tensor"


def test_linear_init_peaks_at_its_parameters():
    peak, lin = _peak(lambda: sf.nn.Linear(N, N))
    size = sum(p.numel() * p.element_size() for p in lin.parameters())
    assert peak <= size + 3 * MB, f"peak {peak / MB:.1f} MB for {size / MB:.0f} MB of parameters"


def test_the_values_are_torchs_across_chunks():
    import torch

    for lib in (torch, sf):
        lib.manual_seed(5)
    got = sf.randn(3, 300_000).numpy()  # several chunks
    want = torch.randn(3, 300_000).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-7)  # Box-Muller's last bit (docs)
    assert (got != want).mean() < 0.3
    t, u = sf.empty(600, 700), torch.empty(600, 700)
    for lib, x in ((sf, t), (torch, u)):
        lib.manual_seed(5)
        lib.nn.init.uniform_(x, -2.0, 3.0)
    np.testing.assert_array_equal(t.numpy(), u.numpy())  # uniform draws are bit-exact
    h, k = sf.empty(700, 600, dtype=sf.bfloat16), torch.empty(700, 600, dtype=torch.bfloat16)
    for lib, x in ((sf, h), (torch, k)):
        lib.manual_seed(5)
        lib.nn.init.normal_(x, 0.0, 1.0)
    assert (h.float().numpy() != k.float().numpy()).mean() < 0.01
