"""``torch.cuda``'s RNG-state functions on this CPU-only machine answer as torch's CPU build
(the round trip with a GPU is in tests/host_cuda/test_cuda_rng_host_cuda.py)."""

import inspect

import pytest
import torch

import shardflow as sf

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="compares with a CPU-only machine")

NAMES = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "seed", "seed_all",
         "initial_seed", "manual_seed", "manual_seed_all"]


def test_signatures_are_torchs():
    for name in NAMES:
        t_sig = inspect.signature(getattr(torch.cuda, name))
        s_sig = inspect.signature(getattr(sf.cuda, name))
        assert list(s_sig.parameters) == list(t_sig.parameters), name
        assert [p.default for p in s_sig.parameters.values()] == [p.default for p in t_sig.parameters.values()], name


def test_answers_without_cuda_match_torch():
    assert sf.cuda.get_rng_state_all() == [] == torch.cuda.get_rng_state_all()
    assert sf.cuda.set_rng_state_all([]) is None is torch.cuda.set_rng_state_all([])
    assert sf.cuda.seed() is None is torch.cuda.seed() and sf.cuda.seed_all() is None is torch.cuda.seed_all()
    state = sf.get_rng_state()
    assert sf.cuda.set_rng_state(sf.zeros(4, dtype=sf.uint8)) is None  # queued in torch; nothing here
    assert torch.cuda.set_rng_state(torch.zeros(4, dtype=torch.uint8)) is None
    assert (sf.get_rng_state() == state).all()  # the CPU stream is untouched


@pytest.mark.parametrize("name", ["get_rng_state", "initial_seed"])
def test_calls_that_need_a_device_raise_like_torch(name):
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        getattr(torch.cuda, name)()
    with pytest.raises(AssertionError, match=rf"shardflow.cuda.{name} needs a CUDA device.*device='cpu'"):
        getattr(sf.cuda, name)()
