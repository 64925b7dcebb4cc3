"""torch.autograd.graph's save_on_cpu and disable_saved_tensors_hooks (shardflow/autograd/graph.py)."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.func._compare import compare, t

X = np.random.default_rng(4).standard_normal((3, 4))


def test_save_on_cpu_gives_the_same_gradients_as_torch():
    def program(m):
        x = t(m, X, requires_grad=True)
        with m.autograd.graph.save_on_cpu(pin_memory=False):
            y = (m.tanh(x) * x).sum()
        y.backward()
        return y, x.grad

    compare(program)


def test_disable_saved_tensors_hooks_refuses_save_on_cpu_like_torch():
    for m in (torch, sf):
        with m.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with m.autograd.graph.save_on_cpu():
                    pass
        with m.autograd.graph.save_on_cpu():  # allowed again after the block
            pass
