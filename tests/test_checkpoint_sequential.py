"""``torch.utils.checkpoint.checkpoint_sequential`` against torch 2.13 (outputs and gradients
of an ``nn.Sequential`` with the same weights) and against running without checkpointing."""

import warnings

import numpy as np
import pytest
import torch

import shardflow
from shardflow.utils import checkpoint as ckpt


def _models():
    torch.manual_seed(0)
    th = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8),
                             torch.nn.ReLU(), torch.nn.Linear(8, 3), torch.nn.Sigmoid(),
                             torch.nn.Linear(3, 2))
    sf = shardflow.nn.Sequential(shardflow.nn.Linear(4, 8), shardflow.nn.Tanh(),
                                 shardflow.nn.Linear(8, 8), shardflow.nn.ReLU(),
                                 shardflow.nn.Linear(8, 3), shardflow.nn.Sigmoid(),
                                 shardflow.nn.Linear(3, 2))
    sf.load_state_dict({k: shardflow.tensor(v.detach().numpy()) for k, v in th.state_dict().items()})
    return sf, th


@pytest.mark.parametrize("segments", [1, 2, 3, 7])
@pytest.mark.parametrize("as_list", [False, True])
def test_matches_torch_outputs_and_gradients(segments, as_list):
    sf, th = _models()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    xs, xt = shardflow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fs = list(sf) if as_list else sf
    ft = list(th) if as_list else th
    ys = ckpt.checkpoint_sequential(fs, segments, xs, use_reentrant=False)
    yt = torch.utils.checkpoint.checkpoint_sequential(ft, segments, xt, use_reentrant=False)
    np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (ys * ys).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (name, p), (_, q) in zip(sf.named_parameters(), th.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_input_without_grad_gives_parameter_grads_as_torch(use_reentrant):
    sf, th = _models()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    ckpt.checkpoint_sequential(sf, 3, shardflow.tensor(x), use_reentrant=use_reentrant).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's reentrant "None of the inputs have requires_grad"
        torch.utils.checkpoint.checkpoint_sequential(th, 3, torch.tensor(x),
                                                     use_reentrant=use_reentrant).sum().backward()
    for (name, p), (_, q) in zip(sf.named_parameters(), th.named_parameters()):
        assert (p.grad is None) == (q.grad is None), name  # reentrant: the checkpointed get none
        if q.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_gradients_equal_the_uncheckpointed_run_with_dropout():
    # preserve_rng_state: the recomputed dropout masks are the first run's
    layers = [shardflow.nn.Linear(4, 6), shardflow.nn.Dropout(0.5), shardflow.nn.Linear(6, 6),
              shardflow.nn.Dropout(0.5), shardflow.nn.Linear(6, 1)]
    model = shardflow.nn.Sequential(*layers)
    x = shardflow.randn(8, 4)
    shardflow.manual_seed(3)
    model(x).sum().backward()
    plain = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    shardflow.manual_seed(3)
    ckpt.checkpoint_sequential(model, 2, x, use_reentrant=False).sum().backward()
    for a, p in zip(plain, model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), a, rtol=1e-6, atol=1e-7)


def test_use_reentrant_none_warns_and_bad_keywords_raise_like_torch():
    sf, th = _models()
    x = shardflow.randn(2, 4)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        ckpt.checkpoint_sequential(sf, 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        ckpt.checkpoint_sequential(sf, 2, x, use_reentrant=False, foo=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
            torch.utils.checkpoint.checkpoint_sequential(th, 2, torch.randn(2, 4), use_reentrant=False, foo=1)


def test_checkpoint_error_is_a_runtime_error_at_torchs_path():
    assert issubclass(ckpt.CheckpointError, RuntimeError)
    assert issubclass(torch.utils.checkpoint.CheckpointError, RuntimeError)
    from shardflow.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential  # noqa: F401
