"""Grad modes are per thread, as in PyTorch, and work as context managers and decorators
(with and without parentheses); each case is run on shardflow and on torch."""

import threading

import numpy as np
import pytest
import torch

import shardflow as sf


def _leaf(lib):
    return lib.tensor(np.ones(3, np.float32), requires_grad=True)


def _other_thread_during_no_grad(lib):
    """What a second thread sees while the main thread is inside ``no_grad``."""
    x = _leaf(lib)
    inside, seen = threading.Event(), {}

    def worker():
        inside.wait(timeout=10)
        seen["enabled"] = lib.is_grad_enabled()
        seen["records"] = (x * 2).requires_grad
        with lib.no_grad():  # and the worker's own no_grad must not leak into main
            seen["worker_no_grad"] = lib.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    with lib.no_grad():
        inside.set()
        t.join(timeout=10)
        seen["main_inside"] = (x * 2).requires_grad
    seen["main_after"] = lib.is_grad_enabled()
    assert not t.is_alive()
    return seen


def test_grad_mode_is_per_thread_like_torch():
    got = _other_thread_during_no_grad(sf)
    assert got == _other_thread_during_no_grad(torch)
    assert got == {"enabled": True, "records": True, "worker_no_grad": False,
                   "main_inside": False, "main_after": True}


def test_new_thread_starts_with_grad_enabled_even_if_creator_disabled_it():
    for lib in (sf, torch):
        seen = []
        lib.set_grad_enabled(False)
        try:
            t = threading.Thread(target=lambda: seen.append(lib.is_grad_enabled()))
            t.start()
            t.join(timeout=10)
        finally:
            lib.set_grad_enabled(True)
        assert seen == [True], lib.__name__


def _modes(lib):
    x = _leaf(lib)
    out = {}

    @lib.no_grad
    def bare(v):
        return (v * 2).requires_grad

    @lib.no_grad()
    def called(v):
        return (v * 2).requires_grad

    @lib.inference_mode
    def inference_bare(v):
        return (v * 2).requires_grad

    @lib.set_grad_enabled(False)
    def set_off(v):
        return (v * 2).requires_grad

    out["after_set_grad_enabled_decorator"] = lib.is_grad_enabled()
    out["bare"], out["called"] = bare(x), called(x)
    out["inference_bare"], out["set_off"] = inference_bare(x), set_off(x)
    with lib.no_grad():
        with lib.enable_grad():
            out["enable_in_no_grad"] = (x * 2).requires_grad
        with lib.inference_mode(False):
            out["inference_false_in_no_grad"] = lib.is_grad_enabled()
    lib.set_grad_enabled(False)
    out["set_as_call"] = lib.is_grad_enabled()
    lib.set_grad_enabled(True)
    with lib.set_grad_enabled(False):
        out["set_as_context"] = lib.is_grad_enabled()
    out["end"] = lib.is_grad_enabled()
    return out


def test_decorator_and_context_forms_match_torch():
    assert _modes(sf) == _modes(torch)


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with sf.no_grad():
            raise ValueError("boom")
    assert sf.is_grad_enabled()
