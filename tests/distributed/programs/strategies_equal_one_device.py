"""Mirrored, MultiWorkerMirrored and CentralStorage strategies on 2 ranks train to the same
parameters and summed losses as OneDeviceStrategy on the whole batch (different initial
weights per rank: ``broadcast_parameters`` makes them rank 0's), and ``reduce``'s
SUM / MEAN / axis."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
from shardflow.distributed.strategies import (
    CentralStorageStrategy,
    MirroredStrategy,
    MultiWorkerMirroredStrategy,
    OneDeviceStrategy,
    get_strategy,
)

from ._strategy_training import mlp, train


def run(strategy, r):
    with strategy.scope():
        assert get_strategy() is strategy
        # different per rank: broadcast_parameters makes them equal; one device: rank 0's seed
        model = mlp(1 if isinstance(strategy, OneDeviceStrategy) else 1 + r)
        opt = sf.optim.SGD(model.parameters(), lr=0.2)
    return train(strategy, model, opt)


def main(argv):
    dist.init_process_group()
    r = dist.get_rank()
    ref, ref_loss = run(OneDeviceStrategy(), r)
    for cls in (MirroredStrategy, MultiWorkerMirroredStrategy, CentralStorageStrategy):
        s = cls()
        assert s.num_replicas_in_sync == 2
        params, losses = run(s, r)
        for a, b in zip(params, ref):
            assert np.allclose(a, b, atol=1e-6), (cls.__name__, np.abs(a - b).max())
        assert np.allclose(losses, ref_loss, atol=1e-6), (cls.__name__, losses, ref_loss)
    s = MirroredStrategy()
    v = sf.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32) * (r + 1))
    assert np.allclose(s.reduce("SUM", v).numpy(), [[3, 6], [9, 12]])
    assert np.allclose(s.reduce("MEAN", v).numpy(), [[1.5, 3], [4.5, 6]])
    # mean of 4 rows over 2 replicas
    assert np.allclose(s.reduce("MEAN", v, axis=0).numpy(), [3, 4.5])
