"""torch's top-level autocast getters/setters against torch 2.13: the same sequence of calls
gives the same answers, the setters really change what ops compute, deprecation warnings and
type errors are torch's."""

import warnings

import pytest
import torch

import shardflow as sf


@pytest.fixture(autouse=True)
def restore_autocast_state():
    """Leave both libraries' autocast state as each test found it."""
    saved = [(lib, [(d, lib.is_autocast_enabled(d), lib.get_autocast_dtype(d)) for d in ("cpu", "cuda")],
              lib.is_autocast_cache_enabled()) for lib in (sf, torch)]
    yield
    for lib, devices, cache in saved:
        for d, enabled, dtype in devices:
            lib.set_autocast_enabled(d, enabled)
            lib.set_autocast_dtype(d, dtype)
        lib.set_autocast_cache_enabled(cache)


def _name(dt):
    return str(dt).split(".")[-1]


def _sequence(lib):
    x = lib.ones(2, 2)
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen.append(lib.is_autocast_cpu_enabled())
        seen.append(_name(lib.get_autocast_cpu_dtype()))
        seen.append(_name(lib.get_autocast_gpu_dtype()))
        lib.set_autocast_cpu_enabled(True)
        seen += [lib.is_autocast_enabled("cpu"), lib.is_autocast_cpu_enabled(), _name((x @ x).dtype)]
        lib.set_autocast_cpu_dtype(lib.float16)
        seen += [_name(lib.get_autocast_dtype("cpu")), _name((x @ x).dtype)]
        with lib.autocast("cpu", enabled=False):
            seen.append(_name((x @ x).dtype))
        seen.append(_name((x @ x).dtype))  # the region restored the state the setter made
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        lib.set_autocast_enabled("cpu", False)
        seen += [lib.is_autocast_enabled("cpu"), _name((x @ x).dtype)]
        lib.set_autocast_enabled(True)  # one argument: CUDA's
        seen += [lib.is_autocast_enabled(), lib.is_autocast_enabled("cpu")]
        lib.set_autocast_enabled(False)
        lib.set_autocast_gpu_dtype(lib.bfloat16)
        seen.append(_name(lib.get_autocast_dtype("cuda")))
        lib.set_autocast_gpu_dtype(lib.float16)
        seen.append(lib.is_autocast_cache_enabled())
        lib.set_autocast_cache_enabled(False)
        seen.append(lib.is_autocast_cache_enabled())
        with lib.autocast("cpu", cache_enabled=True):
            seen.append(lib.is_autocast_cache_enabled())
        seen.append(lib.is_autocast_cache_enabled())
        lib.set_autocast_cache_enabled(True)
        seen += [lib.autocast_increment_nesting(), lib.autocast_increment_nesting()]
        with lib.autocast("cpu"):
            seen += [lib.autocast_increment_nesting(), lib.autocast_decrement_nesting()]
        seen += [lib.autocast_decrement_nesting(), lib.autocast_decrement_nesting(),
                 lib.autocast_decrement_nesting(), lib.autocast_increment_nesting()]
        lib.clear_autocast_cache()
    warned = [str(w.message).split(" (Triggered")[0] for w in caught if issubclass(w.category, DeprecationWarning)]
    return seen, warned


def test_the_same_calls_give_the_same_answers_and_warnings():
    got, got_warnings = _sequence(sf)
    want, want_warnings = _sequence(torch)
    assert got == want
    assert got_warnings == want_warnings


@pytest.mark.parametrize("call, message", [
    (lambda lib: lib.set_autocast_enabled(1), r"set_autocast_enabled\(\): argument 'enabled' \(position 1\) must be bool, not int"),
    (lambda lib: lib.set_autocast_enabled("cpu", 1), r"argument 'enabled' \(position 2\) must be bool, not int"),
    (lambda lib: lib.set_autocast_dtype("cpu", "x"), r"argument 'dtype' \(position 2\) must be torch.dtype, not str"),
    (lambda lib: lib.set_autocast_cpu_enabled(1), r"enabled must be a bool \(got int\)"),
    (lambda lib: lib.set_autocast_cache_enabled("x"), r"enabled must be a bool \(got str\)"),
    (lambda lib: lib.set_autocast_gpu_dtype("x"), r"dtype must be a torch.dtype \(got str\)"),
])
def test_type_errors_are_torchs(call, message):
    for lib in (sf, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(TypeError, match=message):
                call(lib)
