"""torch's generic ``Join`` with several joinables (rank r holds 2 + r batches).

1. ``Join([ddp, counter], divide_by_initial_world_size=False)``: DDP first (it sends the
   context's heartbeat from its forward), then a ``Joinable`` of one's own whose call
   all-reduces a one (its main hook a zero) and whose post hook broadcasts the last joiner's
   count. Every rank writes its initial parameters (``init.npz``) and its parameters and
   count after the loop (``rank{r}.npz``); the test compares them with a single-process
   PyTorch reference.
2. ``Join([ddp, zero])`` with ``ZeroRedundancyOptimizer(SGD)``, every parameter sharded by
   rows: a joined rank steps its rows from the gradient it still holds (``zinit.npz``,
   ``zrank{r}.npz``).
3. ``throw_on_early_termination=True`` with the counter alone: each rank prints ``RAISED
   {r}: {message}`` (torch's messages) or ``NO ERROR {r}``.
"""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.distributed.algorithms.join import Join, Joinable, JoinHook
from shardflow.distributed.optim import ZeroRedundancyOptimizer
from shardflow.nn.parallel import DistributedDataParallel as DDP


def batches(rank):
    g = np.random.default_rng(700 + rank)
    return [(g.standard_normal((3, 4)).astype(np.float32), g.standard_normal((3, 2)).astype(np.float32))
            for _ in range(2 + rank)]


class CounterHook(JoinHook):
    def __init__(self, counter):
        self.counter = counter

    def main_hook(self):
        dist.all_reduce(sf.zeros(1))

    def post_hook(self, is_last_joiner):
        src = sf.tensor([dist.get_rank() if is_last_joiner else -1])
        dist.all_reduce(src, op=dist.ReduceOp.MAX)
        dist.broadcast(self.counter.count, src=int(src.item()))


class Counter(Joinable):
    def __init__(self):
        super().__init__()
        self.count = sf.zeros(1)

    def __call__(self):
        Join.notify_join_context(self)
        t = sf.ones(1)
        dist.all_reduce(t)
        self.count += t

    def join_hook(self, **kwargs):
        return CounterHook(self)

    @property
    def join_device(self):
        return sf.device("cpu")

    @property
    def join_process_group(self):
        return dist.group.WORLD


def main(argv):
    out = argv[0]
    dist.init_process_group()
    r = dist.get_rank()
    sf.manual_seed(11 + r)  # different init per rank: DDP broadcasts rank 0's
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    ddp = DDP(model)
    np.savez(f"{out}/init.npz", *[p.numpy() for p in model.parameters()])
    opt = sf.optim.SGD(model.parameters(), lr=0.3)
    counter = Counter()
    with Join([ddp, counter], divide_by_initial_world_size=False):
        for x, y in batches(r):
            opt.zero_grad()
            F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
            counter()  # after DDP's collectives: the hooks shadow them in the joinables' order
            opt.step()
    assert ddp._join is None  # DDP's forward is plain again
    np.savez(f"{out}/rank{r}.npz", *[p.numpy() for p in model.parameters()], counter.count.numpy())
    sf.manual_seed(21 + r)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    ddp = DDP(model)
    np.savez(f"{out}/zinit.npz", *[p.numpy() for p in model.parameters()])
    opt = ZeroRedundancyOptimizer(model.parameters(), sf.optim.SGD, lr=0.3)
    with Join([ddp, opt]):
        for x, y in batches(r):
            opt.zero_grad()
            F.mse_loss(ddp(sf.tensor(x)), sf.tensor(y)).backward()
            opt.step()
    np.savez(f"{out}/zrank{r}.npz", *[p.numpy() for p in model.parameters()])
    counter = Counter()
    try:
        with Join([counter], throw_on_early_termination=True):
            for _ in range(1 + r):
                counter()
    except RuntimeError as e:
        print(f"RAISED {r}: {e}", flush=True)
    else:
        print(f"NO ERROR {r}", flush=True)
    dist.barrier()
