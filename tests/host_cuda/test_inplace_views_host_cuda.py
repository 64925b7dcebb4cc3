"""In-place ops on views on ``cuda`` (CuPy's host stand-in): every program of
``tests/autograd/test_inplace_on_views.py`` gives the CPU's values and gradients. Before
session 30 a device view was rebased alone, so ``y[1:].mul_(10)`` left ``y`` and its gradient
unchanged on a GPU (seen on an H200) while the CPU was right."""

import numpy as np
import pytest

import shardflow as sf
from tests.autograd.test_inplace_on_views import PROGRAMS, X


def _run(program, device):
    x = sf.tensor(X, requires_grad=True, device=device)
    w = sf.tensor(X[0] + 1.0, requires_grad=True, device=device)
    out = program(sf, x, w)
    weights = sf.tensor(np.arange(out.numel(), dtype=np.float32).reshape(tuple(out.shape)), device=device)
    (out * weights).sum().backward()
    return [None if t is None else t.detach().cpu().numpy() for t in (out, x.grad, w.grad)]


def _zeros_on(device):
    return lambda *shape: sf.zeros(*shape, device=device)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inplace_on_a_view_on_cuda_equals_the_cpu(name):
    program = PROGRAMS[name]
    if name == "buffer_row_from_param":  # its buffer is made by the program: put it on the device
        def program(L, x, w, device=None):
            b = sf.zeros(3, 4, device=x.device)
            b[1].copy_(w)
            return b * x
    cpu, cuda = _run(program, "cpu"), _run(program, "cuda")
    for got, want in zip(cuda, cpu):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_cuda_view_keeps_aliasing_its_base():
    y = sf.tensor(X, requires_grad=True, device="cuda") * 1
    v = y[1]
    v.add_(1)
    v.mul_(2)
    assert y.device.type == "cuda" and y.grad_fn.name() == "CopySlices" and v._base is y
    np.testing.assert_array_equal(y.detach().cpu().numpy()[1], (X[1] * 1 + 1) * 2)
