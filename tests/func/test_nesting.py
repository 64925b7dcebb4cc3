"""Transforms composed with each other and with ordinary autograd, against torch.func."""

import numpy as np
import torch

import shardflow as sf
from tests.func._compare import compare, t

X = np.random.default_rng(6).standard_normal((3, 2))


def test_jacrev_of_jacrev_and_vmap_of_hessian_match_torch():
    compare(lambda m: m.func.jacrev(m.func.jacrev(lambda x: (x * x * x).sum(1)))(t(m, X)))
    compare(lambda m: m.func.vmap(m.func.hessian(lambda x: (x * x * x).sum()))(t(m, X)))
    compare(lambda m: m.func.vmap(m.func.jacrev(lambda x: x * x))(t(m, X)))


def test_grad_of_vmap_matches_torch():
    compare(lambda m: m.func.grad(lambda x: m.func.vmap(lambda r: (r * r * r).sum())(x).sum())(t(m, X)))


def test_grad_under_no_grad_still_differentiates_like_torch():
    def program(m):
        with m.no_grad():
            g = m.func.grad(lambda x: (x * x * x).sum())(t(m, X, requires_grad=True))
        assert not g.requires_grad
        return g

    compare(program)


def test_per_sample_gradients_with_parameters_that_require_grad_match_torch():
    torch.manual_seed(0)
    theirs = torch.nn.Linear(2, 3).double()
    ours = sf.nn.Linear(2, 3).double()
    ours.load_state_dict({k: sf.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    models = {sf: ours, torch: theirs}

    def program(m):
        params = dict(models[m].named_parameters())  # not detached: results stay differentiable

        def loss(p, x):
            return m.func.functional_call(models[m], p, (x,)).tanh().sum()

        out = m.func.vmap(m.func.grad(loss), in_dims=(None, 0))(params, t(m, X))
        assert out["weight"].requires_grad
        return out

    compare(program)


def test_jacrev_with_respect_to_module_parameters_matches_torch():
    torch.manual_seed(1)
    theirs = torch.nn.Linear(2, 3).double()
    ours = sf.nn.Linear(2, 3).double()
    ours.load_state_dict({k: sf.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    models = {sf: ours, torch: theirs}

    def program(m):
        params = {k: v.detach() for k, v in models[m].named_parameters()}
        return m.func.jacrev(lambda p, x: m.func.functional_call(models[m], p, (x,)))(params, t(m, X))

    compare(program)


def test_results_keep_a_graph_to_closed_over_tensors_like_torch():
    def program(m):
        w = t(m, X[:, 0], requires_grad=True)
        x = t(m, X[:, 1])
        g = m.func.grad(lambda z: (z * z * w).sum())(x)
        _, vjp_fn = m.func.vjp(lambda z: z * w, x)
        (v,) = vjp_fn(m.ones(3, dtype=m.float64))
        jac = m.func.jacrev(lambda z: z * z * w)(x)
        flags = (g.requires_grad, v.requires_grad, jac.requires_grad)
        (g * g).sum().backward()  # MAML-style: differentiate through the inner gradient
        g_private = m.func.grad(lambda z: (z * z).sum())(x)
        return flags, w.grad, g_private.requires_grad

    flags, _, private_requires_grad = compare(program)
    assert flags == (True, True, True) and private_requires_grad is False
