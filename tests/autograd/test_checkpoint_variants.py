"""utils.checkpoint's two PyTorch variants against torch 2.13: where no argument requires a
gradient, non-reentrant (``use_reentrant=False``) still gives the parameters inside their
gradients (shardflow gave none: a silent wrong result), reentrant gives none and warns;
``use_reentrant=None`` warns and means reentrant; keyword arguments only non-reentrant."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(seed=0):
    torch.manual_seed(seed)
    tl = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    sl = sf.nn.Sequential(sf.nn.Linear(4, 5), sf.nn.Tanh(), sf.nn.Linear(5, 3))
    sl.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
    x = np.random.default_rng(seed).normal(size=(2, 4)).astype(np.float32)
    return tl, sl, x


def _grads(model):
    return [None if p.grad is None else np.asarray(p.grad.detach().cpu().numpy()) for p in model.parameters()]


def _run(lib, model, x, **kw):
    mod = torch if lib is torch else sf
    xt = mod.tensor(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = mod.utils.checkpoint.checkpoint(model, xt, **kw)
    out.sum().backward() if out.requires_grad else None
    return out, [str(w.message) for w in caught]


def test_non_reentrant_gives_parameter_gradients_when_no_input_requires_grad():
    tl, sl, x = _pair()
    t_out, t_warn = _run(torch, tl, x, use_reentrant=False)
    s_out, s_warn = _run(sf, sl, x, use_reentrant=False)
    assert s_out.requires_grad and t_out.requires_grad
    np.testing.assert_allclose(s_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6)
    for g_s, g_t in zip(_grads(sl), _grads(tl), strict=True):
        assert g_s is not None and g_t is not None
        np.testing.assert_allclose(g_s, g_t, rtol=1e-5, atol=1e-7)
    assert not s_warn and not t_warn


def test_reentrant_without_grad_inputs_warns_and_gives_no_gradients_like_torch():
    tl, sl, x = _pair(1)
    t_out, t_warn = _run(torch, tl, x, use_reentrant=True)
    s_out, s_warn = _run(sf, sl, x, use_reentrant=True)
    assert not t_out.requires_grad and not s_out.requires_grad
    assert all(g is None for g in _grads(sl)) and all(g is None for g in _grads(tl))
    msg = "None of the inputs have requires_grad=True. Gradients will be None"
    assert msg in t_warn and msg in s_warn


def test_unset_use_reentrant_warns_and_means_reentrant():
    tl, sl, x = _pair(2)
    _, t_warn = _run(torch, tl, x)
    _, s_warn = _run(sf, sl, x)
    assert any("use_reentrant parameter should be passed explicitly" in w for w in t_warn)
    assert any("use_reentrant parameter should be passed explicitly" in w for w in s_warn)
    assert all(g is None for g in _grads(sl))


def test_keyword_arguments_pass_through_non_reentrant_only():
    def f(lib):
        return lambda a, scale=1.0: (a * scale).tanh()

    for lib in (torch, sf):
        a = lib.tensor(np.ones(3, np.float32), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(f(lib), a, use_reentrant=False, scale=2.0)
        out.sum().backward()
        np.testing.assert_allclose(a.grad.detach().numpy(), 2 * (1 - np.tanh(2.0) ** 2), rtol=1e-6)
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            lib.utils.checkpoint.checkpoint(f(lib), a, use_reentrant=True, scale=2.0)


# --- context_fn, determinism_check, debug (torch's keywords; they reached the function before)

def _run_with_contexts(lib):
    seen = []

    class Ctx:
        def __init__(self, tag):
            self.tag = tag

        def __enter__(self):
            seen.append(("enter", self.tag, lib.is_grad_enabled()))

        def __exit__(self, *exc):
            seen.append(("exit", self.tag))

    x = lib.ones(2, 3, requires_grad=True)
    out = lib.utils.checkpoint.checkpoint(lambda a: (a * 3).sin(), x, use_reentrant=False,
                                          context_fn=lambda: (Ctx("fwd"), Ctx("recompute")),
                                          determinism_check="default", debug=False)
    out.sum().backward()
    return seen, x.grad.tolist()


def test_context_fn_wraps_forward_and_recomputation_as_torch():
    import torch
    assert _run_with_contexts(sf) == _run_with_contexts(torch)


@pytest.mark.parametrize("kwargs", [{"use_reentrant": False, "determinism_check": "strict"},
                                    {"use_reentrant": True, "context_fn": lambda: (None, None)},
                                    {"use_reentrant": True, "debug": True}])
def test_checkpoint_option_errors_as_torch(kwargs):
    import torch
    with pytest.raises(ValueError) as th:
        torch.utils.checkpoint.checkpoint(lambda a: a * 2, torch.ones(1, requires_grad=True), **kwargs)
    with pytest.raises(ValueError) as got:
        sf.utils.checkpoint.checkpoint(lambda a: a * 2, sf.ones(1, requires_grad=True), **kwargs)
    assert str(got.value) == str(th.value)


def test_recomputation_with_other_shapes_raises_checkpoint_error():
    calls = []

    def grows(a):
        calls.append(1)
        return a.repeat(len(calls))

    x = sf.ones(2, requires_grad=True)
    out = sf.utils.checkpoint.checkpoint(grows, x, use_reentrant=False, determinism_check="default")
    with pytest.raises(sf.utils.checkpoint.CheckpointError, match="different metadata"):
        out.sum().backward()


def test_reentrant_checkpoint_node_has_torchs_name():
    """A reentrant checkpoint's output prints ``grad_fn=<CheckpointFunctionBackward>`` as
    torch's (it printed ``<_CheckpointBackward0>``), each output of a tuple too. The
    non-reentrant node keeps its own name (torch shows the segment's last node there; one
    recomputing node cannot name it: a deviation noted in docs/COMPAT.md)."""
    tl, sl, x = _pair()
    names = []
    for lib, model in ((torch, tl), (sf, sl)):
        t = lib.tensor(x, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(model, t, use_reentrant=True)
        pair = lib.utils.checkpoint.checkpoint(lambda a: (a * 2, a + 1), t, use_reentrant=True)
        names.append((y.grad_fn.name(), [p.grad_fn.name() for p in pair], repr(y).split("grad_fn=")[1]))
    assert names[1] == names[0] == ("CheckpointFunctionBackward", ["CheckpointFunctionBackward"] * 2,
                                    "<CheckpointFunctionBackward>)")
