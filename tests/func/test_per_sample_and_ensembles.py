"""The two torch.func recipes real programs use, against torch: per-sample gradients of an MLP
(vmap(grad(loss)) with functional_call) and model ensembling (stack_module_state + vmap)."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.func._compare import assert_same_tree, compare, to_numpy_tree

R = np.random.default_rng(3)
DATA = R.standard_normal((5, 4))
TARGETS = np.array([0, 2, 1, 1, 0])


def make_mlp(m, with_batchnorm=False):
    layers = [m.nn.Linear(4, 6), m.nn.Tanh(), m.nn.Linear(6, 3)]
    if with_batchnorm:
        layers.insert(1, m.nn.BatchNorm1d(6))
    return m.nn.Sequential(*layers).double()


def mlp_pair(seed, with_batchnorm=False):
    """A torch MLP and a shardflow MLP with the same weights."""
    torch.manual_seed(seed)
    theirs = make_mlp(torch, with_batchnorm)
    ours = make_mlp(sf, with_batchnorm)
    ours.load_state_dict({k: sf.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    return {sf: ours, torch: theirs}


def test_per_sample_gradients_of_mlp_match_torch_and_the_loop():
    models = mlp_pair(0)

    def program(m):
        model = models[m]
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def compute_loss(params, buffers, sample, target):
            predictions = m.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return m.nn.functional.cross_entropy(predictions, target.unsqueeze(0))

        per_sample = m.func.vmap(m.func.grad(compute_loss), in_dims=(None, None, 0, 0))
        return per_sample(params, buffers, m.tensor(DATA), m.tensor(TARGETS))

    ours = compare(program)
    assert set(ours) == {"0.weight", "0.bias", "2.weight", "2.bias"} and ours["0.weight"].shape == (5, 6, 4)
    # and each row is the plain backward of that one sample
    model = models[sf]
    for i in range(len(DATA)):
        model.zero_grad()
        sf.nn.functional.cross_entropy(model(sf.tensor(DATA[i:i + 1])), sf.tensor(TARGETS[i:i + 1])).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(ours[k][i], p.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_ensemble_with_stack_module_state_and_vmap_matches_torch():
    pairs = [mlp_pair(seed) for seed in range(3)]

    def program(m):
        models = [p[m] for p in pairs]
        params, buffers = m.func.stack_module_state(models)
        assert all(v.requires_grad and v.grad_fn is None for v in params.values())

        def fmodel(params, buffers, x):
            return m.func.functional_call(models[0], (params, buffers), (x,))

        same_batch = m.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, m.tensor(DATA))
        per_model_batch = m.func.vmap(fmodel)(params, buffers, m.tensor(np.stack([DATA] * 3)))
        same_batch.sum().backward()  # gradients reach the stacked parameters
        return params, same_batch, per_model_batch, {k: v.grad for k, v in params.items()}

    ours = compare(program)
    assert ours[1].shape == (3, 5, 3)


def test_ensemble_with_batchnorm_buffers_matches_torch():
    pairs = [mlp_pair(seed, with_batchnorm=True) for seed in range(2)]

    def program(m):
        models = [p[m].eval() for p in pairs]
        params, buffers = m.func.stack_module_state(models)

        def fmodel(params, buffers, x):
            return m.func.functional_call(models[0], (params, buffers), (x,))

        return buffers, m.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, m.tensor(DATA))

    compare(program)


def test_replace_all_batch_norm_modules_matches_torch():
    pair = mlp_pair(4, with_batchnorm=True)

    def program(m):
        model = m.func.replace_all_batch_norm_modules_(pair[m])
        bn = model[1]
        assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
        return model(m.tensor(DATA))

    compare(program)


def test_stack_module_state_errors_like_torch():
    for m in (torch, sf):
        with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
            m.func.stack_module_state([])
        a, b = m.nn.Linear(2, 2), m.nn.Linear(2, 2)
        with pytest.raises(RuntimeError, match="same training/eval mode"):
            m.func.stack_module_state([a.train(), b.eval()])
        with pytest.raises(RuntimeError, match="same class"):
            m.func.stack_module_state([m.nn.Linear(2, 2), m.nn.Bilinear(2, 2, 2)])
        b.train().weight.requires_grad_(False)
        with pytest.raises(RuntimeError, match="Expected weight from each model to have the same .requires_grad"):
            m.func.stack_module_state([a, b])


def test_functionalize_returns_the_same_values_as_torch():
    def f(x):
        y = x.clone()
        y.add_(1.0)
        return y * 2.0

    ours = to_numpy_tree(sf.func.functionalize(f)(sf.tensor(DATA)))
    assert_same_tree(ours, to_numpy_tree(torch.func.functionalize(f)(torch.tensor(DATA))))
