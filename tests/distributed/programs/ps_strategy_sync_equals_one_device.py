"""ParameterServerStrategy under MPI, sync mode: every worker ends with one process's
parameters and summed losses (different initial weights per worker: worker 0's win), and
each server applied one round per step with the asked-for optimizer.

``argv``: NUM_PS, OPTIMIZER (sgd or adam), LR. Each rank prints ``PS OK {task_id}`` or
``WORKER OK {task_id}`` (the test counts the roles)."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
from shardflow.distributed.strategies import OneDeviceStrategy, ParameterServerStrategy

from ._strategy_training import mlp, train


def run(strategy, seed, opt_name, lr):
    with strategy.scope():
        model = mlp(seed)
        params = model.parameters()
        opt = sf.optim.Adam(params, lr=lr) if opt_name == "adam" else sf.optim.SGD(params, lr=lr)
    return train(strategy, model, opt)


def main(argv):
    num_ps, opt_name, lr = int(argv[0]), argv[1], float(argv[2])
    dist.init_process_group()
    s = ParameterServerStrategy(num_ps=num_ps, mode="sync", optimizer=opt_name, lr=lr)
    assert s.num_replicas_in_sync == dist.get_world_size() - num_ps
    if s.task_type == "ps":
        stats = s.join()
        assert stats["version"] == 3 and sorted(stats["done"]) == [0, 1], stats
        assert stats["optimizer"] == opt_name, stats
        print("PS OK", s.task_id, flush=True)
        return
    # different seeds: worker 0's values win
    params, losses = run(s, 5 + s.task_id, opt_name, lr)
    s.join()
    ref, ref_loss = run(OneDeviceStrategy(), 5, opt_name, lr)
    for a, b in zip(params, ref):
        assert np.allclose(a, b, atol=1e-6), np.abs(a - b).max()
    assert np.allclose(losses, ref_loss, atol=1e-6), (losses, ref_loss)
    print("WORKER OK", s.task_id, flush=True)
