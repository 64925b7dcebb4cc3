"""Targets for ``shardflow.multiprocessing.spawn`` tests. Spawned children import this module,
so it must stay light (no torch, no shardflow)."""

import os
import sys


def write_rank(i, folder, tag):
    with open(os.path.join(folder, f"{tag}{i}"), "w") as fh:
        fh.write(str(i))


def fail_on_one(i):
    if i == 1:
        raise ValueError("rank one refuses")


def exit_with_code(i):
    if i == 0:
        os._exit(3)


def sys_exit_on_one(i):
    if i == 1:
        sys.exit(4)


def all_reduce_ranks(i, world_size, folder):
    """PyTorch's DDP-tutorial shape: meet with init_process_group(rank, world_size), then
    one collective; the sum of the ranks is written per rank."""
    import shardflow as sf
    import shardflow.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "localhost", "12355"
    dist.init_process_group("gloo", rank=i, world_size=world_size)
    t = sf.tensor([float(i + 1)])
    dist.all_reduce(t)
    with open(os.path.join(folder, f"sum{i}"), "w") as fh:
        fh.write(f"{dist.get_rank()} {dist.get_world_size()} {t.item()}")
    dist.destroy_process_group()


def os_exit_on_one(i):
    """Rank 1 ends without Python seeing it; rank 0 is busy until mpiexec stops it."""
    if i == 1:
        os._exit(3)
    import time
    time.sleep(10)


def sigkill_on_one(i):
    """Rank 1 is killed by SIGKILL (an OOM kill); rank 0 is busy until mpiexec stops it."""
    import signal
    import time

    if i == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10)
