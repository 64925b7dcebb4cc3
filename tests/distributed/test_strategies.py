"""tf.distribute-style strategies on 2 ranks against one process (OneDeviceStrategy on the
whole batch): the same parameters after three SGD steps, and reduce's SUM/MEAN/axis."""

import numpy as np
import pytest

from shardflow.testing.mpi import run_mpi

SCRIPT = r"""
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.distributed.strategies import (OneDeviceStrategy, MirroredStrategy,
    MultiWorkerMirroredStrategy, CentralStorageStrategy, get_strategy)
dist.init_process_group()
r = dist.get_rank()
G = 8  # global batch

def batches():
    for t in range(3):
        g = np.random.default_rng(t)
        yield (g.standard_normal((G, 4)).astype(np.float32), g.standard_normal((G, 2)).astype(np.float32))

def train(strategy):
    with strategy.scope():
        assert get_strategy() is strategy
        sf.manual_seed(1 + r)  # different per rank: broadcast_parameters makes them equal
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        opt = sf.optim.SGD(model.parameters(), lr=0.2)
        if isinstance(strategy, OneDeviceStrategy):
            sf.manual_seed(1)
            model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
            opt = sf.optim.SGD(model.parameters(), lr=0.2)
    strategy.broadcast_parameters(model.parameters())
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y, reduction="sum") / (G * 2)  # compute_average_loss
        loss.backward()
        return loss
    total = []
    for x, y in strategy.experimental_distribute_dataset(batches()):
        loss = strategy.run(step, args=(x, y))
        strategy.apply_gradients(opt, model.parameters())
        total.append(strategy.reduce("SUM", loss, axis=None).item())
    return [p.numpy() for p in model.parameters()], total

ref, ref_loss = train(OneDeviceStrategy())
for cls in (MirroredStrategy, MultiWorkerMirroredStrategy, CentralStorageStrategy):
    s = cls()
    assert s.num_replicas_in_sync == 2
    params, losses = train(s)
    for a, b in zip(params, ref):
        assert np.allclose(a, b, atol=1e-6), (cls.__name__, np.abs(a - b).max())
    assert np.allclose(losses, ref_loss, atol=1e-6), (losses, ref_loss)
s = MirroredStrategy()
v = sf.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32) * (r + 1))
assert np.allclose(s.reduce("SUM", v).numpy(), [[3, 6], [9, 12]])
assert np.allclose(s.reduce("MEAN", v).numpy(), [[1.5, 3], [4.5, 6]])
assert np.allclose(s.reduce("MEAN", v, axis=0).numpy(), [3, 4.5])  # mean of 4 rows over 2 replicas
print("OK", r)
"""


@pytest.mark.mpi
def test_strategies_on_two_ranks_equal_one_device():
    res = run_mpi(SCRIPT, n=2, timeout=90, env={"SHARDFLOW_COMM_TIMEOUT": "30"}).check()
    assert res.output.count("OK") == 2, res.output


def test_parameter_server_strategy_points_to_the_ps_package():
    from shardflow.distributed.strategies import ParameterServerStrategy

    with pytest.raises(NotImplementedError, match="shardflow.distributed.ps"):
        ParameterServerStrategy()


def test_one_device_reduce_and_dataset():
    import shardflow as sf
    from shardflow.distributed.strategies import OneDeviceStrategy

    s = OneDeviceStrategy()
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (got,) = list(s.experimental_distribute_dataset([x]))
    assert np.array_equal(got.numpy(), x)
    assert float(s.reduce("MEAN", sf.tensor(x), axis=0).numpy()[1]) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="'SUM' or 'MEAN'"):
        s.reduce("MAX", sf.tensor(x))
