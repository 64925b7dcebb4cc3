"""torch.distributed.optim.PostLocalSGDOptimizer with model_averaging's PeriodicModelAverager
(one process: the averaging schedule and arithmetic through a recording group that plays the
other rank), and rpc.get_rpc_timeout / RpcBackendOptions against torch 2.13. Two ranks:
tests/distributed/test_dist_compat.py."""

import socket

import numpy as np
import pytest

import shardflow as sf
from shardflow.distributed.algorithms.model_averaging import averagers, utils
from shardflow.distributed.optim import PostLocalSGDOptimizer

torch = pytest.importorskip("torch")


class OtherRank:
    """A group of 2 whose other rank holds ``other`` (the flat parameters): all_reduce(sum)
    adds other / 2, as torch's average_parameters divides before the sum."""

    size = 2

    def __init__(self, other):
        self.other, self.calls = np.asarray(other, np.float32), 0

    def all_reduce(self, flat, op):
        assert op == "sum"
        flat += self.other / 2
        self.calls += 1


def _model():
    sf.manual_seed(0)
    return sf.nn.Linear(3, 2)


def test_post_local_sgd_averages_on_its_schedule():
    model = _model()
    n = sum(p.numel() for p in model.parameters())
    other = np.arange(n, dtype=np.float32)
    group = OtherRank(other)
    opt = PostLocalSGDOptimizer(sf.optim.SGD(model.parameters(), lr=0.1),
                                averagers.PeriodicModelAverager(period=2, warmup_steps=1,
                                                                process_group=group))
    averaged_at = []
    for step in range(5):
        model(sf.ones(4, 3)).pow(2).sum().backward()
        before = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        calls = group.calls
        opt.step()
        after = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        if group.calls > calls:
            averaged_at.append(step)
            stepped = before - 0.1 * np.concatenate(
                [p.grad.numpy().ravel() for p in model.parameters()])
            np.testing.assert_allclose(after, stepped / 2 + other / 2, rtol=1e-6, atol=1e-6)
        opt.zero_grad()
    assert averaged_at == [1, 3]  # warm-up step 0, then every 2nd step
    sd = opt.state_dict()
    assert sd["step"] == 5 and "param_groups" in sd
    fresh = PostLocalSGDOptimizer(sf.optim.SGD(model.parameters(), lr=0.1),
                                  averagers.PeriodicModelAverager(period=2))
    fresh.load_state_dict(sd)
    assert fresh.averager.step == 5 and fresh.param_groups is fresh.optim.param_groups
    del sd["step"]
    with pytest.warns(UserWarning, match="does not contain a step counter"):
        fresh.load_state_dict(sd)
    assert fresh.averager.step == 0
    assert isinstance(opt, sf.optim.Optimizer) and opt.state is opt.optim.state
    assert sf.optim.lr_scheduler.StepLR(opt, 1).get_last_lr() == [0.1]


def test_averager_checks_and_param_filter():
    import torch.distributed.algorithms.model_averaging.averagers as t_avg

    for kwargs in ({"period": 0}, {"period": 2, "warmup_steps": -1}):
        with pytest.raises(ValueError) as mine:
            averagers.PeriodicModelAverager(**kwargs)
        with pytest.raises(ValueError) as theirs:
            t_avg.PeriodicModelAverager(**kwargs, process_group=object())
        assert str(mine.value) == str(theirs.value)
    with pytest.warns(UserWarning, match="When period is 1"):
        averagers.PeriodicModelAverager(period=1)
    model = _model()
    model(sf.ones(1, 3)).sum().backward()
    model.bias.grad = None
    assert utils.get_params_to_average(model.parameters()) == [model.weight]
    assert utils.get_params_to_average([{"params": [model.weight, model.bias]}]) == [model.weight]
    with pytest.raises(NotImplementedError, match="not supported"):
        utils.get_params_to_average([3])


def test_rpc_timeout_and_backend_options(monkeypatch):
    import torch.distributed.rpc as trpc

    import shardflow.distributed.rpc as rpc

    assert (rpc.RpcBackendOptions().rpc_timeout, rpc.RpcBackendOptions().init_method) == \
        (trpc.RpcBackendOptions().rpc_timeout, trpc.RpcBackendOptions().init_method)
    assert isinstance(rpc.TensorPipeRpcBackendOptions(), rpc.RpcBackendOptions)
    with pytest.raises(RuntimeError) as mine:
        rpc.get_rpc_timeout()
    with pytest.raises(RuntimeError) as theirs:
        trpc.get_rpc_timeout()
    assert str(mine.value) == str(theirs.value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    rpc.init_rpc("w0", rank=0, world_size=1,
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(rpc_timeout=12.5))
    try:
        assert rpc.get_rpc_timeout() == 12.5
    finally:
        rpc.shutdown()
