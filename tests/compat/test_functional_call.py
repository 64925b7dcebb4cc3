"""``torch.func.functional_call`` / ``torch.nn.utils.stateless.functional_call`` against torch:
outputs, gradients to the passed tensors, restoration (also after an exception), tied
weights, strict keys, buffers written by the call."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf


class Net:
    """The same small model in both frameworks: linear -> batch norm -> linear, with a tied copy."""

    @staticmethod
    def build(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
        return model


def _pair():
    t_model, s_model = Net.build(torch), Net.build(sf)
    s_model.load_state_dict({k: sf.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    return t_model, s_model


def test_outputs_and_gradients_match_torch_and_module_is_restored():
    t_model, s_model = _pair()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    t_w, s_w = torch.tensor(w, requires_grad=True), sf.tensor(w, requires_grad=True)
    s_orig = s_model[0].weight
    for step in range(2):  # twice: the second call sees a restored module
        t_out = torch.func.functional_call(t_model, {"0.weight": t_w}, (torch.tensor(x),))
        s_out = sf.func.functional_call(s_model, {"0.weight": s_w}, (sf.tensor(x),))
        np.testing.assert_allclose(s_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
        t_out.square().sum().backward()
        s_out.square().sum().backward()
        np.testing.assert_allclose(s_w.grad.numpy(), t_w.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert s_model[0].weight is s_orig and isinstance(s_model[0].weight, sf.nn.Parameter)
    assert s_orig.grad is None  # the module's own weight took no gradient
    # the batch-norm running stats were updated by the calls in train mode, as in torch
    np.testing.assert_allclose(s_model[1].running_mean.numpy(), t_model[1].running_mean.numpy(), rtol=1e-5, atol=1e-6)
    # a plain call uses the module's own weights again
    np.testing.assert_allclose(s_model(sf.tensor(x)).detach().numpy(), t_model(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_restored_after_an_exception():
    lin = sf.nn.Linear(3, 2)
    orig = lin.weight
    with pytest.raises(RuntimeError):
        sf.func.functional_call(lin, {"weight": sf.zeros(2, 5)}, (sf.ones(1, 3),))  # shape mismatch in forward
    assert lin.weight is orig and set(lin._parameters) == {"weight", "bias"}


def test_new_names_are_removed_after_the_call_and_kwargs_pass_through():
    class AddBuffer(sf.nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale + getattr(self, "extra", 0)

    m = AddBuffer()
    out = sf.func.functional_call(m, {"extra": sf.ones(2)}, sf.zeros(2), {"scale": 3.0})
    assert out.tolist() == [1.0, 1.0] and not hasattr(m, "extra")


def test_tied_weights_like_torch():
    def tied(lib):
        m = lib.nn.Module()
        m.a = lib.nn.Linear(2, 2, bias=False)
        m.b = lib.nn.Linear(2, 2, bias=False)
        m.b.weight = m.a.weight
        m.forward = lambda x: m.b(m.a(x))  # noqa: E731
        return m

    for lib in (torch, sf):
        m = tied(lib)
        x = lib.ones(1, 2)
        z = lib.zeros(2, 2)
        eye = lib.eye(2)
        assert lib.func.functional_call(m, {"a.weight": z}, (x,)).abs().sum().item() == 0  # b is tied to a
        out = lib.func.functional_call(m, {"a.weight": eye}, (x,), tie_weights=False)
        assert out.tolist() == (m.b.weight @ lib.ones(2, 1)).t().tolist()
        with pytest.raises(ValueError, match="which are tied. Consider using tie_weights=False"):
            lib.func.functional_call(m, {"a.weight": z, "b.weight": eye}, (x,))


def test_strict_keys_and_bad_dicts_raise_like_torch():
    for lib in (torch, sf):
        m = lib.nn.Linear(2, 2)
        with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Linear:\n\tUnexpected key\(s\): "
                                               r"'nope'.\n\tMissing key\(s\): 'bias'."):
            lib.func.functional_call(m, {"weight": lib.zeros(2, 2), "nope": lib.zeros(1)}, (lib.ones(2),), strict=True)
        with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
            lib.func.functional_call(m, ({"weight": lib.zeros(2, 2)}, {"weight": lib.ones(2, 2)}), (lib.ones(2),))
        out = lib.func.functional_call(m, ({"weight": lib.zeros(2, 2)}, {"bias": lib.ones(2)}), (lib.ones(2),))
        assert out.tolist() == [1.0, 1.0]
    with pytest.raises(AttributeError, match="'nosuch' in key 'nosuch.weight' is not a submodule"):
        sf.func.functional_call(sf.nn.Linear(2, 2), {"nosuch.weight": sf.zeros(1)}, (sf.ones(2),))


def test_stateless_path_warns_as_torch():
    m = sf.nn.Linear(2, 1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = sf.nn.utils.stateless.functional_call(m, {"bias": sf.zeros(1), "weight": sf.ones(1, 2)}, sf.ones(2))
    assert out.tolist() == [2.0]
    assert any(issubclass(x.category, FutureWarning) and "torch.func.functional_call" in str(x.message) for x in w)
