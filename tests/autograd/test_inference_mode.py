"""Inference mode as its own flag (``autograd/grad_mode.py``), torch.autograd's engine switches
and the Tensor attributes ``name`` / ``volatile`` / ``grad_dtype``, against torch 2.13."""

import threading
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

LIBS = [sf, torch]


def both(program):
    out = [program(lib) for lib in LIBS]
    assert out[0] == out[1], out
    return out[0]


def test_inference_mode_flag_and_inference_tensors():
    def program(lib):
        x = lib.randn(3)
        w = lib.randn(3, requires_grad=True)
        with lib.inference_mode():
            y, y2, yw = x * 2, x.exp(), w * w
            inside = (lib.is_inference_mode_enabled(), lib.is_grad_enabled())
            with lib.inference_mode(False):
                nested = (lib.is_inference_mode_enabled(), lib.is_grad_enabled())
            back = lib.is_inference_mode_enabled()
        with lib.no_grad():
            z = x * 2
            in_no_grad = lib.is_inference_mode_enabled()
        return (y.is_inference(), y2.is_inference(), yw.is_inference(), yw.requires_grad, x.is_inference(),
                z.is_inference(), inside, nested, back, in_no_grad, lib.is_inference_mode_enabled(),
                lib.is_inference(y), lib.is_inference(x))

    assert both(program) == (True, True, True, False, False, False, (True, False), (False, True), True,
                             False, False, True, False)


def test_inference_mode_decorator_and_other_threads():
    def program(lib):
        @lib.inference_mode()
        def f(x):
            return (x + 1).is_inference(), lib.is_inference_mode_enabled()

        seen = []
        with lib.inference_mode():
            t = threading.Thread(target=lambda: seen.append(lib.is_inference_mode_enabled()))
            t.start()
            t.join()
        return f(lib.ones(2)), seen, lib.is_inference_mode_enabled()

    assert both(program) == ((True, True), [False], False)


def test_multithreading_switch_and_view_replay():
    def program(lib):
        ag = lib.autograd
        with ag.set_multithreading_enabled(False):
            inside = ag.is_multithreading_enabled()
        after = ag.is_multithreading_enabled()
        ag.set_multithreading_enabled(False)
        plain_call = ag.is_multithreading_enabled()
        ag.set_multithreading_enabled(True)
        return inside, after, plain_call, ag.is_multithreading_enabled(), ag.is_view_replay_enabled()

    assert both(program) == (False, True, False, True, False)


def test_is_tensor_like():
    class Like:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    for lib in LIBS:
        assert lib.autograd.is_tensor_like(lib.ones(1))
        assert lib.autograd.is_tensor_like(Like())
        assert not lib.autograd.is_tensor_like(3) and not lib.autograd.is_tensor_like(np.ones(1))


def test_name_volatile_grad_dtype():
    def program(lib):
        x = lib.randn(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            volatile = x.volatile
        w = lib.randn(2, requires_grad=True)
        default = str(w.grad_dtype).split(".")[-1]
        w.grad_dtype = lib.float64
        (w * 2).sum().backward()
        (w * 2).sum().backward()  # accumulates in float64
        v = lib.randn(2, requires_grad=True)
        v.grad_dtype = None
        return (x.name, volatile, any("volatile" in str(c.message) for c in caught), default,
                str(w.grad.dtype).split(".")[-1], str(w.grad_dtype).split(".")[-1], w.grad.tolist(),
                v.grad_dtype)

    assert both(program) == (None, False, True, "float32", "float64", "float64", [4.0, 4.0], None)


@pytest.mark.parametrize("lib", LIBS, ids=["shardflow", "torch"])
def test_is_inference_mode_enabled_is_top_level(lib):
    assert lib.is_inference_mode_enabled() is False
