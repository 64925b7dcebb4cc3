"""``functorch`` (torch 2.13 still ships it) on shardflow as ``shardflow.functorch``, against
torch: the deprecated transforms (torch.func's, with torch's FutureWarning),
``make_functional`` / ``make_functional_with_buffers`` (a stateless deep copy, the copy's
Parameters returned, tied weights given once) and ``combine_state_for_ensemble``; the
parity rewrite of ``import functorch as ft``."""

import warnings

import functorch
import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.functorch as sft
from shardflow.testing.parity import refuse_torch_names, rewrite_imports

PAIRS = [(torch, functorch), (sf, sft)]


def _net(lib, buffers: bool):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(3, 4), lib.nn.Tanh()]
    if buffers:
        layers.append(lib.nn.BatchNorm1d(4))
    layers.append(lib.nn.Linear(4, 2))
    return lib.nn.Sequential(*layers)


def _state(th_model, sf_model):
    sf_model.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in th_model.state_dict().items()})


def test_make_functional_like_torch():
    models = [_net(torch, False), _net(sf, False)]
    _state(*models)
    x = np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32)
    outs = []
    for (lib, ft), model in zip(PAIRS, models, strict=True):
        with pytest.warns(FutureWarning, match="`functorch.make_functional` is deprecated as of PyTorch 2.0"):
            func, params = ft.make_functional(model)
        assert len(params) == 4 and all(p.requires_grad for p in params)
        assert all(p is not q for p, q in zip(params, model.parameters()))  # the copy's
        assert func.stateless_model[0].weight.is_meta and func.param_names == ("0.weight", "0.bias", "2.weight",
                                                                               "2.bias")
        assert not model[0].weight.is_meta  # the model itself is untouched
        y = func(params, lib.tensor(x))
        y.sum().backward()
        new = tuple(p * 2 for p in params)
        outs.append((y.detach().numpy(), params[0].grad.numpy(), func(new, lib.tensor(x)).detach().numpy()))
        _, frozen = ft.make_functional(model, disable_autograd_tracking=True)
        assert not any(p.requires_grad for p in frozen)
    for s, t in zip(outs[1], outs[0], strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-6)


def test_make_functional_refuses_buffers_like_torch():
    for lib, ft in PAIRS:
        with pytest.raises(RuntimeError, match=r"`model` has buffers. Please use make_functional_with_buffers"):
            ft.make_functional(_net(lib, True))


def test_make_functional_with_buffers_and_jvp_like_torch():
    models = [_net(torch, True), _net(sf, True)]
    _state(*models)
    x = np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32)
    outs = []
    for (lib, ft), model in zip(PAIRS, models, strict=True):
        model.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            func, params, buffers = ft.make_functional_with_buffers(model)
            assert func.buffer_names == ("2.running_mean", "2.running_var", "2.num_batches_tracked")
            tangents = tuple(lib.ones_like(p) * 0.1 for p in params)
            out, jvp_out = ft.jvp(lambda p: func(p, buffers, lib.tensor(x)), (params,), (tangents,))
        outs.append((out.detach().numpy(), jvp_out.detach().numpy()))
    for s, t in zip(outs[1], outs[0], strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-6)


def test_tied_weights_are_given_once_like_torch():
    for lib, ft in PAIRS:
        model = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Linear(3, 3, bias=False))
        model[1].weight = model[0].weight
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            func, params = ft.make_functional(model)
        assert len(params) == 1
        w = lib.eye(3) * 2
        np.testing.assert_allclose(func((w,), lib.ones(1, 3)).detach().numpy(), [[4.0, 4.0, 4.0]])


def test_combine_state_for_ensemble_like_torch():
    outs = []
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32)
    th_models = [_net(torch, False) for _ in range(3)]
    for i, m in enumerate(th_models):
        with torch.no_grad():
            for p in m.parameters():
                p.mul_(i + 1)
    sf_models = [_net(sf, False) for _ in range(3)]
    for t, s in zip(th_models, sf_models):
        _state(t, s)
    for (lib, ft), models in zip(PAIRS, (th_models, sf_models)):
        with pytest.warns(FutureWarning, match="`functorch.combine_state_for_ensemble` is deprecated"):
            func, params, buffers = ft.combine_state_for_ensemble(models)
        assert [tuple(p.shape) for p in params] == [(3, 4, 3), (3, 4), (3, 2, 4), (3, 2)] and buffers == ()
        assert not params[0].requires_grad
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            outs.append(ft.vmap(func, (0, 0, None))(params, buffers, lib.tensor(x)).detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


def test_combine_state_for_ensemble_errors_like_torch():
    for lib, ft in PAIRS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
                ft.combine_state_for_ensemble([])
            a, b = lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)
            b.eval()
            with pytest.raises(RuntimeError, match="Expected all models to have the same training/eval mode"):
                ft.combine_state_for_ensemble([a, b])
            with pytest.raises(RuntimeError, match="Expected all models to be of the same class"):
                ft.combine_state_for_ensemble([a, lib.nn.Tanh()])


@pytest.mark.parametrize("name", ["vmap", "grad", "jvp", "vjp", "jacrev", "jacfwd", "hessian", "grad_and_value"])
def test_transforms_warn_like_torch(name):
    messages = []
    for _, ft in PAIRS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if name == "jvp":
                ft.jvp(lambda a: a * a, (torch.ones(2) if ft is functorch else sf.ones(2),),
                       (torch.ones(2) if ft is functorch else sf.ones(2),))
            elif name == "vjp":
                ft.vjp(lambda a: a * a, torch.ones(2) if ft is functorch else sf.ones(2))
            else:
                getattr(ft, name)(lambda a: (a * a).sum())
        messages.append([str(w.message) for w in caught if w.category is FutureWarning])
    assert messages[1] == messages[0] and len(messages[0]) == 1


def test_rewrite_and_refusal_of_functorch_imports():
    source = "import functorch as ft\nfrom functorch import vmap, make_functional\nimport functorch\n"
    assert rewrite_imports(source) == ("import shardflow.functorch as ft\nfrom shardflow.functorch import vmap, "
                                       "make_functional\nimport shardflow.functorch as functorch\n")
    import types

    mod = types.ModuleType("prog")
    mod.__file__ = "prog.py"
    mod.ft = functorch
    with pytest.raises(ImportError, match="'ft' still comes from 'functorch'"):
        refuse_torch_names(mod)
    mod.ft = sft
    refuse_torch_names(mod)
