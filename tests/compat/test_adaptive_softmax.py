"""``nn.AdaptiveLogSoftmaxWithLoss`` against torch's: the same parameters give the same outputs,
loss, gradients, full log probabilities and predictions, over a few SGD steps."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(**kw):
    torch.manual_seed(0)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], div_value=2.0, **kw)
    s = sf.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], div_value=2.0, **kw)
    assert list(s.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in s.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]
    s.load_state_dict({k: sf.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return t, s


@pytest.mark.parametrize("head_bias", [False, True])
def test_training_steps_match_torch(head_bias):
    t, s = _pair(head_bias=head_bias)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 8)).astype(np.float32)
    y = np.array([0, 3, 4, 9, 10, 19, 2])  # shortlist and both clusters
    t_opt, s_opt = torch.optim.SGD(t.parameters(), lr=0.5), sf.optim.SGD(s.parameters(), lr=0.5)
    for _ in range(3):
        t_out = t(torch.tensor(x), torch.tensor(y))
        s_out = s(sf.tensor(x), sf.tensor(y))
        np.testing.assert_allclose(s_out.output.detach().numpy(), t_out.output.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s_out.loss.item(), t_out.loss.item(), rtol=1e-5)
        t_opt.zero_grad()
        s_opt.zero_grad()
        t_out.loss.backward()
        s_out.loss.backward()
        for (name, tp), sp in zip(t.named_parameters(), s.parameters()):
            np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
        t_opt.step()
        s_opt.step()
    np.testing.assert_allclose(s.log_prob(sf.tensor(x)).detach().numpy(), t.log_prob(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert s.predict(sf.tensor(x)).tolist() == t.predict(torch.tensor(x)).tolist()


def test_unbatched_and_one_cluster_only():
    t, s = _pair()
    x = np.random.default_rng(1).standard_normal(8).astype(np.float32)
    t_out, s_out = t(torch.tensor(x), torch.tensor(12)), s(sf.tensor(x), sf.tensor(12))
    assert tuple(s_out.output.shape) == tuple(t_out.output.shape) == ()
    np.testing.assert_allclose(s_out.loss.item(), t_out.loss.item(), rtol=1e-5)
    xb = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    t_out, s_out = t(torch.tensor(xb), torch.tensor([1, 2, 3])), s(sf.tensor(xb), sf.tensor([1, 2, 3]))
    np.testing.assert_allclose(s_out.output.detach().numpy(), t_out.output.detach().numpy(), rtol=1e-5)


def test_errors_like_torch():
    for lib in (torch, sf):
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 4])
        with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [])
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4])
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
            m(lib.zeros(2, 8), lib.tensor([1, 25]))
        with pytest.raises(RuntimeError, match="Input and target should have the same size in the batch dimension"):
            m(lib.zeros(3, 8), lib.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
            m(lib.zeros(2, 8), lib.zeros(2, 2, dtype=lib.int64))


def test_predict_with_rows_inside_and_outside_the_shortlist():
    t, s = _pair(head_bias=True)
    with torch.no_grad():
        t.head.bias.copy_(torch.tensor([0, 0, 0, 0, 1.5, 1.5]))  # make the cluster logits competitive
    s.head.load_state_dict({k: sf.tensor(v.numpy()) for k, v in t.head.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((64, 8)).astype(np.float32) * 3
    head_choice = t.head(torch.tensor(x)).argmax(1)
    assert (head_choice < 4).any() and (head_choice >= 4).any()  # the mixed case is exercised
    assert s.predict(sf.tensor(x)).tolist() == t.predict(torch.tensor(x)).tolist()


@pytest.mark.parametrize("dtype", ["int16", "uint8", "float32", "bool"])
def test_target_of_another_dtype_is_refused_as_torch(dtype):
    """torch gathers with an index of the target's own dtype, so only int32 / int64 targets
    work; shardflow computed a loss from a float or bool target (session 40, compat-audio)."""
    messages = []
    for lib in (torch, sf):
        lib.manual_seed(0)
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(6, 12, [3, 7], div_value=2.0)
        with pytest.raises(RuntimeError) as caught:
            m(lib.ones(4, 6), lib.tensor([0, 4, 11, 8]).to(getattr(lib, dtype)))
        messages.append(str(caught.value))
    assert messages[1] == messages[0]
