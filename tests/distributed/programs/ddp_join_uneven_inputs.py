"""DDP ``join()`` with uneven inputs (rank r holds 2 + r batches), then
``throw_on_early_termination``.

``argv``: ``initial`` or ``active`` (``divide_by_initial_world_size``), and a folder where
every rank writes its initial parameters (``init.npz``, equal on all ranks after DDP's
broadcast) and its parameters after the joined loop (``rank{r}.npz``): the test compares
them with its single-process PyTorch reference. Each rank prints ``RAISED {r}: {message}``
(or ``NO ERROR {r}``) for the throwing join; the test checks PyTorch's messages."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.nn.parallel import DistributedDataParallel as DDP


def batches(rank):
    g = np.random.default_rng(500 + rank)
    return [(g.standard_normal((3, 5)).astype(np.float32), g.standard_normal((3, 2)).astype(np.float32))
            for _ in range(2 + rank)]


def main(argv):
    divide_initial, out = argv[0] == "initial", argv[1]
    dist.init_process_group()
    r = dist.get_rank()
    sf.manual_seed(3 + r)  # different init per rank: DDP broadcasts rank 0's
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2))
    ddp = DDP(model, bucket_cap_mb=0.0002)  # a few buckets, so the shadowing order matters
    ddp.reducer.set_piece_bytes(48)  # buckets reduced in pieces: joined ranks shadow each piece
    np.savez(f"{out}/init.npz", *[p.numpy() for p in model.parameters()])
    lr = 0.2
    with ddp.join(divide_by_initial_world_size=divide_initial):
        for x, y in batches(r):
            ddp.zero_grad(set_to_none=True)
            F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
            for p in model.parameters():
                p.array -= lr * p.grad.array
    np.savez(f"{out}/rank{r}.npz", *[p.numpy() for p in model.parameters()])
    x, y = batches(0)[0]  # training goes on normally after the context
    F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
    # throw_on_early_termination: rank 0 has 1 batch, the others 1 + r
    ddp.zero_grad()
    try:
        with ddp.join(throw_on_early_termination=True):
            for _ in range(1 + r):
                F.mse_loss(ddp(sf.ones(2, 5)), sf.zeros(2, 2)).backward()
    except RuntimeError as e:
        print(f"RAISED {r}: {e}", flush=True)
    else:
        print(f"NO ERROR {r}", flush=True)
    dist.barrier()  # every rank raised at the same point: still in step
