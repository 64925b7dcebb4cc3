"""``symbolic_trace(f, concrete_args=...)`` as torch 2.13 traces it (found by the
torch.compile tutorial's ``torch.fx.symbolic_trace(f1, concrete_args={"x": inp1})``, which
generated code with a tensor's repr as a default and failed to compile)."""

import warnings

import numpy as np
import pytest
import torch

import shardflow


def _f(x, n, m=2, z=None, b=True):
    return x * n + m


def _f1(x, y):
    if x.sum() < 0:
        return -y
    return y


def _signature(code):
    return next(line for line in code.splitlines() if line.startswith("def forward"))


def test_concrete_args_placeholders_and_asserts_like_torch():
    """The placeholders keep their place as ``<name>_1`` with the parameter's own default;
    the body uses the concrete values; a call with another value raises AssertionError with
    torch's message (an assert for bool/int, ``_assert_is_none`` for None)."""
    concrete = {"n": 3, "m": 4, "z": None, "b": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg = torch.fx.symbolic_trace(_f, concrete_args=concrete)
    sg = shardflow.fx.symbolic_trace(_f, concrete_args=concrete)
    assert _signature(sg.code) == _signature(tg.code) == "def forward(self, x, n_1, m_1 = 2, z_1 = None, b_1 = True):"
    assert [n.name for n in sg.graph.nodes] == [n.name for n in tg.graph.nodes]
    np.testing.assert_array_equal(sg(shardflow.ones(2), 3, 4, None, False).numpy(),
                                  tg(torch.ones(2), 3, 4, None, False).numpy())
    for args, message in (((5, 4, None, False), "n has been specialized to have value 3 but got another value"),
                          ((3, 4, 1, False), "z has been specialized to have value None but got another value"),
                          ((3, 4, None, True), "b has been specialized to have value False but got another value")):
        for lib, g in ((torch, tg), (shardflow, sg)):
            with pytest.raises(AssertionError, match=message):
                g(lib.ones(2), *args)


def test_concrete_tensor_arg_like_torch():
    """A tensor in ``concrete_args`` (the torch.compile tutorial's data-dependent ``f1``): the
    branch is taken once at trace time, the placeholder ``x_1`` stays, and torch's warning
    says no assertion guards it; the traced function ignores ``x`` (silently wrong for
    ``-x``, as in torch -- the tutorial's point)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 5)).astype(np.float32), rng.standard_normal((5, 5)).astype(np.float32)
    a = a if a.sum() > 0 else -a
    results = []
    for lib in (torch, shardflow):
        x, y = lib.from_numpy(a.copy()), lib.from_numpy(b.copy())
        with pytest.warns(UserWarning, match="Was not able to add assertion to guarantee correct input x"):
            g = lib.fx.symbolic_trace(_f1, concrete_args={"x": x})
        results.append((_signature(g.code), [n.name for n in g.graph.nodes],
                        bool(lib.allclose(_f1(x, y), g(x, y))), bool(lib.allclose(_f1(-x, y), g(-x, y)))))
    assert results[1] == results[0] == ("def forward(self, x_1, y):", ["x_1", "y", "output"], True, False)
