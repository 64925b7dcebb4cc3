"""``torch.random`` (shardflow.random): the same functions as torch's module, on shardflow's
default generator, and ``fork_rng`` restoring the state as torch's does."""

import numpy as np
import pytest
import torch

import shardflow as sf


def test_module_has_torchs_names_and_they_are_the_top_level_ones():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
                 "default_generator", "Generator"):
        assert hasattr(torch.random, name) and hasattr(sf.random, name), name
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "default_generator"):
        assert getattr(sf.random, name) is getattr(sf, name), name
    import shardflow.random as mod

    assert mod is sf.random


def test_seed_state_round_trip():
    assert sf.random.manual_seed(5) is sf.random.default_generator
    assert sf.random.initial_seed() == 5
    state = sf.random.get_rng_state()
    a = sf.rand(4).numpy()
    sf.random.set_rng_state(state)
    np.testing.assert_array_equal(sf.rand(4).numpy(), a)
    s = sf.random.seed()
    assert sf.random.initial_seed() == s


@pytest.mark.parametrize("enabled", [True, False])
def test_fork_rng_restores_the_state_like_torch(enabled):
    for lib in (torch, sf):
        lib.manual_seed(0)
        before = lib.rand(3).numpy()
        lib.manual_seed(0)
        with lib.random.fork_rng(enabled=enabled):
            inside = lib.rand(3).numpy()
        after = lib.rand(3).numpy()
        np.testing.assert_array_equal(inside, before)
        if enabled:  # the block's draws did not advance the generator
            np.testing.assert_array_equal(after, before)
        else:
            assert not np.array_equal(after, before)


def test_fork_rng_restores_after_an_error_and_with_devices():
    sf.manual_seed(1)
    state = sf.get_rng_state().clone()
    with pytest.raises(KeyError), sf.random.fork_rng(devices=[]):
        sf.rand(5)
        raise KeyError("x")
    np.testing.assert_array_equal(sf.get_rng_state().numpy(), state.numpy())
    with sf.random.fork_rng(devices=[0], device_type="cuda"):  # one generator for every device
        sf.manual_seed(99)
    np.testing.assert_array_equal(sf.get_rng_state().numpy(), state.numpy())
