"""Session 33's fault probes whose error every rank can catch (one launch, 2 ranks): each
mistake raises the expected type with a message naming the ranks and the fix, and the job
goes on (a barrier after each case completes). Prints ``OK <case> <rank>`` per case. It ends
with an async all-reduce that rank 1 never waits for: the launch must still end cleanly."""

import datetime
import time

import shardflow as torch
import shardflow.distributed as dist
import shardflow.nn as nn
from shardflow.comm import CommError


def _expect(case, r, exc, *needles, fn, on=(0, 1)):
    """``fn()`` raises ``exc`` with every needle in its message on the ranks ``on``; on the
    other ranks it returns normally."""
    if r not in on:
        fn()
        dist.barrier()
        print(f"OK {case} {r}", flush=True)
        return
    try:
        fn()
    except exc as e:
        text = str(e)
        for needle in needles:
            assert needle in text, (case, needle, text)
    else:
        raise AssertionError(f"{case}: no {exc.__name__} on rank {r}")
    dist.barrier()  # the job goes on: the group is still in step
    print(f"OK {case} {r}", flush=True)


def main(argv):
    dist.init_process_group("gloo")
    r = dist.get_rank()

    # new_group skipped on rank 1 (it calls a barrier instead): a mismatch on both ranks, not
    # rank 0 left in MPI's Split and rank 1's barrier timing out
    _expect("new_group_skipped", r, CommError, "rank 0: new_group(ranks=[0, 1]) as collective",
            "rank 1: barrier() as collective", "new_group is a collective",
            fn=lambda: dist.new_group([0, 1]) if r == 0 else dist.barrier())
    # the ranks passed different ranks lists
    _expect("new_group_other_ranks", r, CommError, "new_group(ranks=[0, 1])",
            "new_group(ranks=[1])", fn=lambda: dist.new_group([0, 1] if r == 0 else [1]))
    # duplicates: torch's ValueError and words, before any collective
    _expect("new_group_duplicates", r, ValueError,
            "ranks list must not contain duplicate entries, got [0, 1, 1]",
            fn=lambda: dist.new_group([0, 1, 1]))
    g = dist.new_group([0, 1])  # the group still works after the mismatches
    t = torch.ones(2)
    dist.all_reduce(t, group=g)
    assert t.tolist() == [2.0, 2.0], t

    # DDP over models that differ across ranks: torch's RuntimeError, naming what differs
    ddp = nn.parallel.DistributedDataParallel
    torch.manual_seed(0)
    _expect("ddp_param_count", r, RuntimeError,
            f"DDP expects same model across all ranks, but Rank {r} has {2 if r == 0 else 4} "
            f"params, while rank {1 - r} has inconsistent {4 if r == 0 else 2} params",
            "build the same model on every rank",
            fn=lambda: ddp(nn.Linear(4, 2) if r == 0 else nn.Sequential(nn.Linear(4, 4),
                                                                         nn.Linear(4, 2))))
    _expect("ddp_param_shape", r, RuntimeError,
            "DDP expects same model across all ranks, but params[0] (weight) has sizes",
            f"[{3 if r == 0 else 5}, 4] (float32) on rank {r}",
            f"[{5 if r == 0 else 3}, 4] (float32) on rank {1 - r}",
            fn=lambda: ddp(nn.Linear(4, 3 if r == 0 else 5)))

    # gather_object with another dst on each rank (it completed silently)
    _expect("gather_object_dst", r, ValueError,
            "the ranks passed different destinations (rank 0: dst=0, rank 1: dst=1)",
            fn=lambda: dist.gather_object(r, [None, None], dst=r))

    # broadcast_object_list into a list of another length: the receiving rank raises
    _expect("broadcast_object_list_length", r, ValueError,
            "rank 0 broadcast 2 objects but this rank's object_list has 1 slots", on=(1,),
            fn=lambda: dist.broadcast_object_list(["a", "b"] if r == 0 else [None], src=0))

    # monitored_barrier honours timeout=: rank 1 comes 1.5 s late, rank 0 raises after 0.3 s
    def monitored():
        if r == 1:
            time.sleep(1.5)
        dist.monitored_barrier(timeout=datetime.timedelta(milliseconds=300 if r == 0 else 30000))
    _expect("monitored_barrier_timeout", r, RuntimeError,
            "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 300 ms", on=(0,), fn=monitored)
    _expect("monitored_barrier_bad_timeout", r, ValueError, "the timeout must be positive",
            fn=lambda: dist.monitored_barrier(timeout=0))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))  # in time: no error

    # last: an async all-reduce that rank 1 never waits for, and no destroy_process_group.
    # Rank 1's exit must still progress it (rank 0 waits on it): it timed out before.
    work = dist.all_reduce(torch.ones(2), async_op=True)
    if r == 0:
        work.wait()
