"""tf.distribute-style strategies against one process (OneDeviceStrategy on the whole batch).

* Mirrored, MultiWorkerMirrored and CentralStorage on 2 ranks: the same parameters after
  three SGD steps, and reduce's SUM/MEAN/axis.
* ParameterServerStrategy under MPI: 1 server + 2 workers (SGD) and 2 servers + 2 workers
  (Adam on the servers), sync: every worker ends with one process's parameters, the summed
  losses agree, the servers applied one round per step.
* ParameterServerStrategy on plain processes (TF_CONFIG dicts), async: a worker killed
  mid-run is lost and the other worker finishes.
"""

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


PS_SCRIPT = r"""
import sys
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
import shardflow.distributed as dist
from shardflow.distributed.strategies import OneDeviceStrategy, ParameterServerStrategy
dist.init_process_group()
NUM_PS, OPT, LR = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
G = 8  # global batch

def batches():
    for t in range(3):
        g = np.random.default_rng(t)
        yield (g.standard_normal((G, 4)).astype(np.float32), g.standard_normal((G, 2)).astype(np.float32))

def build(seed):
    sf.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = (sf.optim.Adam(model.parameters(), lr=LR) if OPT == "adam" else sf.optim.SGD(model.parameters(), lr=LR))
    return model, opt

def train(strategy, seed):
    with strategy.scope():
        model, opt = build(seed)
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

s = ParameterServerStrategy(num_ps=NUM_PS, mode="sync", optimizer=OPT, lr=LR)
assert s.num_replicas_in_sync == dist.get_world_size() - NUM_PS
if s.task_type == "ps":
    stats = s.join()
    assert stats["version"] == 3 and sorted(stats["done"]) == [0, 1] and stats["optimizer"] == OPT, stats
    print("PS OK", s.task_id)
else:
    params, losses = train(s, seed=5 + s.task_id)  # different seeds: worker 0's values win
    s.join()
    ref, ref_loss = train(OneDeviceStrategy(), seed=5)
    for a, b in zip(params, ref):
        assert np.allclose(a, b, atol=1e-6), np.abs(a - b).max()
    assert np.allclose(losses, ref_loss, atol=1e-6), (losses, ref_loss)
    print("WORKER OK", s.task_id)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("n, num_ps, opt, lr", [(3, 1, "sgd", 0.2), (4, 2, "adam", 1e-3)])
def test_parameter_server_strategy_sync_equals_one_device(n, num_ps, opt, lr):
    res = run_mpi(PS_SCRIPT, n=n, args=[str(num_ps), opt, str(lr)], timeout=120,
                  env={"SHARDFLOW_COMM_TIMEOUT": "60"}).check()
    assert res.output.count("WORKER OK") == 2 and res.output.count("PS OK") == num_ps, res.output


KILL_SCRIPT = r"""
import json, os, sys
import numpy as np
import shardflow as sf, shardflow.nn as nn, shardflow.nn.functional as F
from shardflow.distributed.strategies import ParameterServerStrategy
cfg = json.loads(sys.argv[1])
s = ParameterServerStrategy(cfg["tf_config"], mode="async", staleness=1, lr=0.1, worker_timeout=2.0,
                            heartbeat=0.2)
if s.task_type == "ps":
    print("STATS", json.dumps(s.join()), flush=True)
else:
    sf.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    s.broadcast_parameters(model.parameters())
    for t in range(10):
        if s.task_id == 1 and t == 2:
            os.kill(os.getpid(), 9)
        x = np.random.default_rng(t).standard_normal((8, 4)).astype(np.float32)
        model.zero_grad()
        F.mse_loss(model(sf.tensor(x)), sf.tensor(x[:, :1])).backward()
        s.apply_gradients(None, model.parameters())
    s.join()
    print("FINISHED", flush=True)
"""


def test_parameter_server_strategy_plain_processes_survive_a_killed_worker():
    import json
    import os
    import signal
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:  # a free port for the server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cluster = {"ps": [f"127.0.0.1:{port}"], "worker": ["w0", "w1"]}

    def start(kind, i):
        cfg = {"tf_config": {"cluster": cluster, "task": {"type": kind, "index": i}}}
        return subprocess.Popen([sys.executable, "-u", "-c", KILL_SCRIPT, json.dumps(cfg)], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})

    procs = [start("ps", 0), start("worker", 0), start("worker", 1)]
    outs = [p.communicate(timeout=90) for p in procs]
    assert procs[2].returncode == -signal.SIGKILL, outs[2]
    assert procs[1].returncode == 0 and "FINISHED" in outs[1][0], outs[1]
    assert procs[0].returncode == 0, outs[0]
    stats = json.loads([ln for ln in outs[0][0].splitlines() if ln.startswith("STATS")][0][6:])
    assert stats["lost"] == [1] and stats["done"] == [0] and stats["clocks"]["0"] == 10, stats
    assert "worker 1 lost" in outs[0][1]


def test_parameter_server_strategy_refuses_bad_setups_before_starting():
    import shardflow as sf
    import shardflow.nn as nn
    from shardflow.distributed.ps.cluster import check_optimizer
    from shardflow.distributed.strategies import ParameterServerStrategy

    with pytest.raises(ValueError, match="1 <= num_ps < world size"):
        ParameterServerStrategy(num_ps=1)  # one process: nobody left to be a worker
    with pytest.raises(ValueError, match="TF_CONFIG-shaped dict"):
        ParameterServerStrategy({"cluster": {"ps": []}})
    with pytest.raises(ValueError, match="is not in the cluster"):
        ParameterServerStrategy({"cluster": {"ps": ["127.0.0.1:1"], "worker": ["a"]},
                                 "task": {"type": "worker", "index": 3}})
    with pytest.raises(ValueError, match="optimizer must be 'sgd' or 'adam'"):
        ParameterServerStrategy(optimizer="rmsprop")
    with pytest.raises(NotImplementedError, match="variable_partitioner"):
        ParameterServerStrategy(variable_partitioner=object())
    params = list(nn.Linear(2, 2).parameters())
    config = {"optimizer": "sgd", "lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8}
    check_optimizer(sf.optim.SGD(params, lr=0.1), config)
    check_optimizer(None, config)
    with pytest.raises(ValueError, match="never stepped"):
        check_optimizer(sf.optim.SGD(params, lr=0.1, momentum=0.9), config)
    with pytest.raises(ValueError, match="Adam"):
        check_optimizer(sf.optim.Adam(params, lr=0.1), config)


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
