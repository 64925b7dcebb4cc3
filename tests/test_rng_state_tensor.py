"""``torch.get_rng_state()`` is a uint8 tensor of 5056 bytes (shardflow returned a NumPy
array: ``state.clone()`` raised AttributeError and ``state.shape`` printed a tuple), and
restoring it replays the same draws, on both frameworks and across them."""

import torch

import shardflow as sf


def test_get_rng_state_is_torchs_uint8_tensor():
    for lib in (torch, sf):
        lib.manual_seed(3)
        state = lib.get_rng_state()
        assert isinstance(state, lib.Tensor) and state.dtype == lib.uint8 and tuple(state.shape) == (5056,)
        assert isinstance(lib.random.get_rng_state(), lib.Tensor)
        first = lib.randn(3)
        lib.set_rng_state(state.clone())  # the common save-and-restore idiom
        assert lib.equal(lib.randn(3), first)
    sf.manual_seed(11)
    torch.manual_seed(11)
    assert sf.get_rng_state().numpy().tobytes() == torch.get_rng_state().numpy().tobytes()
    torch.set_rng_state(torch.from_numpy(sf.get_rng_state().numpy()))
    assert sf.randn(4).tolist() == torch.randn(4).tolist()
