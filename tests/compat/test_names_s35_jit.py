"""torch.jit's executor/fuser switches and ``torch.jit.Error`` (shardflow/jit/fusion_settings.py):
they change nothing in shardflow, but answer and refuse as torch 2.13's."""

import warnings

import pytest
import torch

import shardflow as sf


@pytest.fixture(autouse=True)
def _restore_torch_strategy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old_t, old_s = torch.jit.set_fusion_strategy([]), sf.jit.set_fusion_strategy([])
        yield
        torch.jit.set_fusion_strategy(old_t), sf.jit.set_fusion_strategy(old_s)


def test_context_managers_run_the_block_and_accept_torchs_arguments():
    x = sf.ones(2)
    for m in (torch, sf):
        for flag in (True, False, 1, None):
            with m.jit.optimized_execution(flag):
                pass
        for name in ("fuser0", "fuser1", "fuser3", "none"):
            with m.jit.fuser(name):
                pass
    with sf.jit.optimized_execution(False), sf.jit.fuser("fuser1"):
        assert (x * 2).tolist() == [2.0, 2.0]


def test_bad_arguments_raise_torchs_exception_types():
    for m in (torch, sf):
        with pytest.raises(Exception, match="unrecognized fuser option") as e:
            with m.jit.fuser("fuserX"):
                pass
        assert type(e.value) is Exception
        with pytest.raises(TypeError):
            with m.jit.optimized_execution("yes"):
                pass
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(ValueError, match="FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: static"):
                m.jit.set_fusion_strategy([("static", 1)])
            for bad in ("x", [("STATIC", "a")], [("STATIC", -1)]):
                with pytest.raises(TypeError):
                    m.jit.set_fusion_strategy(bad)


def test_set_fusion_strategy_returns_the_previous_strategy_and_warns():
    for m in (torch, sf):
        with pytest.warns(DeprecationWarning, match="set_fusion_strategy` is deprecated"):
            m.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])  # torch's default
        with pytest.warns(DeprecationWarning):
            assert m.jit.set_fusion_strategy([("DYNAMIC", 3)]) == [("STATIC", 2), ("DYNAMIC", 10)]
        with pytest.warns(DeprecationWarning):
            assert m.jit.set_fusion_strategy([]) == [("DYNAMIC", 3)]


def test_jit_error_is_an_exception_class():
    assert issubclass(sf.jit.Error, Exception) and sf.jit.Error.__name__ == torch.jit.Error.__name__ == "Error"
    with pytest.raises(sf.jit.Error, match="boom"):
        raise sf.jit.Error("boom")
