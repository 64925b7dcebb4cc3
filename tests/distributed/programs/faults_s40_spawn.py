"""``mp.spawn`` targets of ``test_faults_s40.py`` (spawned children import this module)."""

import os
import time


def raise_while_other_waits(i):
    """torch's DDP-tutorial shape: rank 1 raises while rank 0 waits in an all_reduce."""
    import shardflow as torch
    import shardflow.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "localhost", "12356"
    dist.init_process_group("gloo", rank=i, world_size=2)
    dist.all_reduce(torch.ones(3))
    if i == 1:
        time.sleep(0.3)  # rank 0 is inside the next all_reduce by now
        raise ValueError("bad batch on rank 1")
    dist.all_reduce(torch.ones(4))


def return_while_other_waits(i):
    """Rank 1's function returns early (a skipped last batch) while rank 0 waits."""
    import shardflow as torch
    import shardflow.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "localhost", "12357"
    dist.init_process_group("gloo", rank=i, world_size=2)
    dist.all_reduce(torch.ones(3))
    if i == 1:
        return
    dist.all_reduce(torch.ones(4))
