"""Process-wide switches (shardflow/backends/switches.py) against torch 2.13's answers."""

import pytest
import torch

import shardflow as sf


@pytest.fixture(autouse=True)
def _restore():
    yield
    sf.use_deterministic_algorithms(False)
    torch.use_deterministic_algorithms(False)
    sf.set_warn_always(False)
    torch.set_warn_always(False)


@pytest.mark.parametrize("mode", [0, 1, 2, "default", "warn", "error"])
def test_deterministic_debug_mode_round_trips_like_torch(mode):
    sf.set_deterministic_debug_mode(mode)
    torch.set_deterministic_debug_mode(mode)
    assert sf.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
    assert sf.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
    assert (sf.is_deterministic_algorithms_warn_only_enabled()
            == torch.is_deterministic_algorithms_warn_only_enabled())


def test_deterministic_debug_mode_reads_use_deterministic_algorithms():
    sf.use_deterministic_algorithms(True, warn_only=True)
    assert sf.get_deterministic_debug_mode() == 1
    sf.use_deterministic_algorithms(True)
    assert sf.get_deterministic_debug_mode() == 2


@pytest.mark.parametrize("bad, match", [("bad", "expected one of `default`, `warn`, `error`, but got bad"),
                                        (5, "expected 0, 1, or 2, but got 5")])
def test_deterministic_debug_mode_bad_values_raise_like_torch(bad, match):
    with pytest.raises(RuntimeError, match=match):
        torch.set_deterministic_debug_mode(bad)
    with pytest.raises(RuntimeError, match=match):
        sf.set_deterministic_debug_mode(bad)
    assert sf.get_deterministic_debug_mode() == 0  # nothing changed


def test_warn_always_flag():
    assert sf.is_warn_always_enabled() is False is torch.is_warn_always_enabled()
    sf.set_warn_always(True)
    assert sf.is_warn_always_enabled() is True


def test_warn_always_repeats_once_per_process_warnings_like_torch():
    """With ``set_warn_always(True)`` torch's TORCH_WARN_ONCE warnings (here ``float()`` of a
    tensor that requires grad) are given every time; shardflow's once-per-process ones too."""
    import warnings

    def warned(lib):
        x = lib.ones(1, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            float(x), float(x)
        # torch's C++ warnings end with where they were raised: not part of the message
        return [str(w.message).split(" (Triggered internally at")[0] for w in caught]

    for lib in (sf, torch):
        lib.set_warn_always(True)
    th, ours = warned(torch), warned(sf)
    assert len(th) == 2 and ours == th
    for lib in (sf, torch):
        lib.set_warn_always(False)
    assert len(warned(sf)) <= 1  # once per process again (maybe given already by another test)
    assert warned(sf) == []


def test_flush_denormal_and_init_num_threads():
    assert sf.set_flush_denormal(True) is False  # not settable from NumPy: torch's answer without the feature
    assert sf.set_flush_denormal(False) is False
    assert sf.init_num_threads() is None is torch.init_num_threads()


def test_legacy_contiguous_format_is_contiguous_format_like_torch():
    assert torch.legacy_contiguous_format is torch.contiguous_format
    assert sf.legacy_contiguous_format is sf.contiguous_format
    x = sf.ones(2, 3)
    assert x.is_contiguous(memory_format=sf.legacy_contiguous_format)


def test_generator_device_and_clone_state_like_torch():
    g, t = sf.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert str(g.device) == str(t.device) == "cpu"
    g2, t2 = g.clone_state(), t.clone_state()
    assert sf.rand(3, generator=g).tolist() == torch.rand(3, generator=t).tolist()
    assert sf.rand(3, generator=g2).tolist() == torch.rand(3, generator=t2).tolist()  # the cloned state
    assert sf.rand(1, generator=sf.Generator().clone_state()).tolist() == torch.rand(1, generator=torch.Generator().clone_state()).tolist()


def test_modules_remove_duplicate_like_torch():
    for lib in (sf, torch):
        m = lib.nn.Sequential(lib.nn.ReLU())
        m.add_module("again", m[0])
        assert len(list(m.modules())) == 2 and len(list(m.modules(remove_duplicate=False))) == 3
