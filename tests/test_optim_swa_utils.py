"""``optim.swa_utils`` against torch 2.13: AveragedModel (SWA, EMA, avg_fn / multi_avg_fn,
use_buffers), SWALR's annealed learning rates, update_bn's recomputed statistics."""

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.optim import swa_utils as S

TS = torch.optim.swa_utils


def _nets():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    sm = sf.nn.Sequential(sf.nn.Linear(3, 4), sf.nn.BatchNorm1d(4), sf.nn.ReLU(), sf.nn.Linear(4, 2))
    sm.load_state_dict({k: sf.tensor(v.numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, sm


def _perturb(tm, sm, seed):
    """The same random change of the weights and buffers of both models (a training step)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for (k, tv), sv in zip(tm.state_dict().items(), sm.state_dict().values()):
            if tv.is_floating_point():
                d = rng.standard_normal(tuple(tv.shape)).astype(np.float32)
                tv.add_(torch.tensor(d))
                sv.copy_(sv + sf.tensor(d))


def _same_state(ta, sa, rtol=1e-5):
    ts, ss = ta.state_dict(), sa.state_dict()
    assert list(ss) == list(ts)
    for k in ts:
        np.testing.assert_allclose(ss[k].numpy(), ts[k].numpy(), rtol=rtol, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("kind", ["swa", "ema_avg", "ema_multi", "swa_multi", "custom"])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_torch(kind, use_buffers):
    if kind == "swa_multi" and use_buffers:
        pytest.skip("torch 2.13 itself fails here: _foreach_addcdiv_ on num_batches_tracked (int64)")
    tm, sm = _nets()
    fns = {"swa": ({}, {}),
           "ema_avg": ({"avg_fn": TS.get_ema_avg_fn(0.9)}, {"avg_fn": S.get_ema_avg_fn(0.9)}),
           "ema_multi": ({"multi_avg_fn": TS.get_ema_multi_avg_fn(0.8)}, {"multi_avg_fn": S.get_ema_multi_avg_fn(0.8)}),
           "swa_multi": ({"multi_avg_fn": TS.get_swa_multi_avg_fn()}, {"multi_avg_fn": S.get_swa_multi_avg_fn()}),
           "custom": ({"avg_fn": lambda a, p, n: 0.5 * a + 0.5 * p}, {"avg_fn": lambda a, p, n: 0.5 * a + 0.5 * p})}
    tk, sk = fns[kind]
    ta = TS.AveragedModel(tm, use_buffers=use_buffers, **tk)
    sa = S.AveragedModel(sm, use_buffers=use_buffers, **sk)
    assert sa.n_averaged.dtype == sf.int64
    for step in range(4):
        _perturb(tm, sm, step)
        ta.update_parameters(tm)
        sa.update_parameters(sm)
        _same_state(ta, sa)
    assert int(sa.n_averaged.item()) == 4
    assert sa.module is not sm  # a copy
    x = np.random.default_rng(9).standard_normal((5, 3)).astype(np.float32)
    ta.eval()
    sa.eval()
    np.testing.assert_allclose(sa(sf.tensor(x)).numpy(), ta(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_swa_is_the_mean_of_the_snapshots():
    m = sf.nn.Linear(2, 2)
    avg = S.AveragedModel(m)
    snaps = []
    for i in range(3):
        with sf.no_grad():
            m.weight.copy_(sf.full((2, 2), float(i * i)))
        snaps.append(m.weight.numpy().copy())
        avg.update_parameters(m)
    np.testing.assert_allclose(avg.module.weight.numpy(), np.mean(snaps, 0), rtol=1e-6)


def test_averaged_model_refuses_both_fns_and_bad_decay():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        S.AveragedModel(sf.nn.Linear(2, 2), avg_fn=S.get_swa_avg_fn(), multi_avg_fn=S.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5.*\[0,1\]"):
        S.get_ema_avg_fn(1.5)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
def test_swalr_matches_torch(strategy, anneal_epochs):
    tp = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(1))]
    sp = [sf.nn.Parameter(sf.zeros(2)), sf.nn.Parameter(sf.zeros(1))]
    to = torch.optim.SGD([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.3}], lr=0.1)
    so = sf.optim.SGD([{"params": [sp[0]]}, {"params": [sp[1]], "lr": 0.3}], lr=0.1)
    ts = TS.SWALR(to, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    ss = S.SWALR(so, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    for _ in range(6):
        np.testing.assert_allclose(ss.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        to.step()
        so.step()
        ts.step()
        ss.step()
    state = ss.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state
    ss.load_state_dict(state)
    assert ss.anneal_func(1.0) == 1.0
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        S.SWALR(so, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        S.SWALR(so, swa_lr=0.1, anneal_epochs=-1)


def test_update_bn_matches_torch():
    tm, sm = _nets()
    xs = [np.random.default_rng(i).standard_normal((4, 3)).astype(np.float32) for i in range(3)]
    tloader = [(torch.tensor(x), torch.zeros(4)) for x in xs]
    sloader = [(sf.tensor(x), sf.zeros(4)) for x in xs]
    tm.eval()
    sm.eval()
    TS.update_bn(tloader, tm)
    S.update_bn(sloader, sm)
    _same_state(tm, sm)
    assert not sm.training and sm[1].momentum == 0.1  # restored
    bn = sm[1]
    assert int(bn.num_batches_tracked.item()) == 3
