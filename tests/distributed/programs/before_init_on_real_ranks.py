"""On 3 real ranks, before ``init_process_group``: ``dist.get_rank()`` and ``hvd.rank()``
raise (naming what to call), a DataLoader still works (unsharded); after it, torch.distributed
and Horovod agree on rank and size."""

import shardflow as sf
import shardflow.distributed as dist
import shardflow.horovod as hvd
from shardflow.utils.data import DataLoader, TensorDataset

from ._common import raises


def main(argv):
    raises(ValueError, dist.get_rank, "Default process group has not been initialized")
    raises(ValueError, hvd.rank, "hvd.init()")
    ds = TensorDataset(sf.arange(0, 6))
    assert [int(v) for (b,) in DataLoader(ds, batch_size=4) for v in b.tolist()] == list(range(6))
    dist.init_process_group()
    r, n = dist.get_rank(), dist.get_world_size()
    assert n == 3 and hvd.size() == 3 and hvd.rank() == r
