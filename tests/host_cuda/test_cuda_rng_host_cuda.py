"""``torch.cuda`` RNG states with a (stand-in) GPU: one generator serves every device, so the
CUDA state is that generator's state, and restoring it repeats the GPU draws."""

import numpy as np
import pytest

import shardflow as sf


def test_restoring_the_cuda_state_repeats_gpu_draws():
    sf.manual_seed(5)
    state = sf.cuda.get_rng_state()
    assert state.dtype == sf.uint8 and state.device == sf.device("cpu")  # torch's ByteTensor on the CPU
    a = sf.randn(6, device="cuda")
    sf.cuda.set_rng_state(state)
    b = sf.randn(6, device="cuda")
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert len(sf.cuda.get_rng_state_all()) == sf.cuda.device_count() >= 1
    sf.cuda.set_rng_state_all(sf.cuda.get_rng_state_all())
    assert sf.cuda.initial_seed() == 5 == sf.initial_seed()


def test_a_bad_state_or_device_raises():
    with pytest.raises(ValueError, match="not a CPU RNG state"):
        sf.cuda.set_rng_state(sf.zeros(4, dtype=sf.uint8))
    with pytest.raises(RuntimeError, match="device index 99 is out of range"):
        sf.cuda.get_rng_state(99)
