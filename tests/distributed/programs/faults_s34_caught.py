"""Session 34's fault probes whose error every rank can catch (one launch, 2 ranks): each
mistake raises the expected type with a message naming the ranks and the fix, and the job
goes on (a barrier after each case completes). Prints ``OK <case> <rank>`` per case; the
cases that are not mistakes (recv from any rank, uneven all_to_all_single) check values."""

import datetime

import shardflow as torch
import shardflow.distributed as dist
import shardflow.nn as nn
from shardflow.comm import CommError
from shardflow.distributed.fsdp import fully_shard


def _expect(case, r, exc, *needles, fn):
    """``fn()`` raises ``exc`` with every needle in its message on every rank."""
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


def _ok(case, r):
    dist.barrier()
    print(f"OK {case} {r}", flush=True)


def main(argv):
    dist.init_process_group("gloo")
    r = dist.get_rank()

    # reduce / gather with another dst on each rank (they completed silently): the dst rides
    # in the signature of the all-reduce / all-gather they are built on
    t = torch.ones(3)
    _expect("reduce_dst", r, CommError, "all_reduce(shape=(3,), dtype=float32, op=sum, root=0)",
            "root=1)", "dist.reduce's dst", "pass the same dst on every rank",
            fn=lambda: dist.reduce(t, dst=r))
    assert t.tolist() == [1.0, 1.0, 1.0], t  # nothing changed
    _expect("gather_dst", r, CommError, "all_gather(shape=(3,), dtype=float32, root=0)",
            "dist.gather's dst", fn=lambda: dist.gather(t, [torch.zeros(3), torch.zeros(3)],
                                                       dst=r))

    # recv without src: from any rank (it was a TypeError); irecv's Work has _source_rank()
    if r == 1:
        dist.send(torch.full((2,), 5.0), 0)
        dist.send(torch.full((2,), 6.0), 0, tag=3)
        dist.send(torch.full((2,), 7.0), 0, tag=3)
        dist.send_object_list(["from 1"], dst=0)
    else:
        got = torch.zeros(2)
        assert dist.recv(got) == 1 and got.tolist() == [5.0, 5.0], got
        a, b = torch.zeros(2), torch.zeros(2)
        wa = dist.irecv(a, tag=3)  # posted first: it takes the first message
        wb = dist.irecv(b, src=1, tag=3)
        wb.wait()
        assert wa._source_rank() == 1 and (a.tolist(), b.tolist()) == ([6.0] * 2, [7.0] * 2)
        slots = [None]
        assert dist.recv_object_list(slots) == 1 and slots == ["from 1"], slots
    _ok("recv_any_source", r)

    # all_to_all_single with split sizes (it raised NotImplementedError): torch's values
    out = torch.zeros(3)
    dist.all_to_all_single(out, torch.arange(3.0) + 10 * r, [1, 2] if r == 0 else [2, 1],
                           [1, 2] if r == 0 else [2, 1])
    assert out.tolist() == ([0.0, 10.0, 11.0] if r == 0 else [1.0, 2.0, 12.0]), out
    _ok("a2a_uneven", r)
    _expect("a2a_splits_mismatch", r, RuntimeError,
            "rank 0 sends 3 rows to rank 1, which expects 2",
            "input_split_sizes[j] must equal rank j's output_split_sizes[i]",
            fn=lambda: dist.all_to_all_single(torch.zeros(4), torch.zeros(4), [2, 2],
                                              [1, 3] if r == 0 else [2, 2]))
    _expect("a2a_splits_sum", r, RuntimeError, "Split sizes doesn't match total dim 0 size",
            "input_split_sizes [1, 2] sum to 3, but the input has 4 rows",
            fn=lambda: dist.all_to_all_single(torch.zeros(4), torch.zeros(4), [2, 2], [1, 2]))

    _expect("a2a_indivisible", r, RuntimeError, "Tensor's dim 0 does not divide equally "
            "across group size", "input (3,), output (3,), 2 ranks",
            fn=lambda: dist.all_to_all_single(torch.zeros(3), torch.zeros(3)))

    # Work.wait(timeout=timedelta) (a TypeError before)
    w = dist.all_reduce(torch.ones(2), async_op=True)
    assert w.wait(timeout=datetime.timedelta(seconds=30)) is True
    _ok("wait_timedelta", r)

    # fully_shard over models that differ across ranks (a bare broadcast mismatch before)
    _expect("fsdp_models_differ", r, RuntimeError,
            "fully_shard(Sequential) expects the same model on every rank, but parameter "
            f"0.weight has shape [{3 + r}, 4] (float32) on rank {r}",
            f"rank {1 - r} has 0.weight of shape [{4 - r}, 4]", "build the same model",
            fn=lambda: fully_shard(nn.Sequential(nn.Linear(4, 3 + r), nn.Linear(3 + r, 2))))

    # DDP(device_ids=[0]) on a CPU module: torch's ValueError, before any communication
    _expect("ddp_device_ids_cpu", r, ValueError,
            "DistributedDataParallel device_ids and output_device arguments only work with",
            "but got device_ids [0], output_device None, and module parameters "
            "{device(type='cpu')}", "leave device_ids out",
            fn=lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0]))
    dist.destroy_process_group()
