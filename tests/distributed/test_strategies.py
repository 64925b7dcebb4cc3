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

from shardflow.testing.mpi import program_command, run_program


@pytest.mark.mpi
def test_strategies_on_two_ranks_equal_one_device():
    run_program("tests.distributed.programs.strategies_equal_one_device", n=2, timeout=90,
                env={"SHARDFLOW_COMM_TIMEOUT": "30"}).check()


@pytest.mark.mpi
@pytest.mark.parametrize("n, num_ps, opt, lr", [(3, 1, "sgd", 0.2), (4, 2, "adam", 1e-3)])
def test_parameter_server_strategy_sync_equals_one_device(n, num_ps, opt, lr):
    res = run_program("tests.distributed.programs.ps_strategy_sync_equals_one_device", n=n,
                      args=[str(num_ps), opt, str(lr)], timeout=120,
                      env={"SHARDFLOW_COMM_TIMEOUT": "60"}).check()
    assert res.output.count("WORKER OK") == 2 and res.output.count("PS OK") == num_ps, res.output


def test_parameter_server_strategy_plain_processes_survive_a_killed_worker():
    import json
    import os
    import signal
    import socket
    import subprocess

    with socket.socket() as probe:  # a free port for the server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cluster = {"ps": [f"127.0.0.1:{port}"], "worker": ["w0", "w1"]}

    def start(kind, i):
        cfg = {"tf_config": {"cluster": cluster, "task": {"type": kind, "index": i}}}
        command = program_command("tests.distributed.programs.ps_strategy_async_killed_worker",
                                  [json.dumps(cfg)])
        return subprocess.Popen(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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
