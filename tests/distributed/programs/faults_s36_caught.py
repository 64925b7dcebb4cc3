"""Session 36's fault probes that every rank can catch (one launch, 2 ranks). Prints
``OK <case> <rank>`` per case; a barrier after each case shows the job goes on.

* ``outside_group``: a rank outside ``new_group([0])`` (``GroupMember.NON_GROUP_MEMBER``):
  ``get_rank(g)`` / ``get_world_size(g)`` are -1 and every collective does nothing there with
  torch's UserWarning "Running all_reduce on global rank 1 which does not belong to the
  given group." (they raised a RuntimeError); ``destroy_process_group(g)`` is a no-op there
  (it raised an AttributeError); the member's collectives run on the group of one.
* ``destroyed_group``: a collective, a query or a second destroy on a destroyed group, and a
  collective on the old world object after ``destroy_process_group()``: torch's ValueError
  naming the fix (the collective crashed the rank with a segmentation fault).
* ``p2p_bad_tag``: ``send`` / ``recv`` / ``isend`` / a ``P2POp`` with tag -1: torch's
  RuntimeError "Tag must be nonnegative" on both ranks, nothing posted (both ranks hung: the
  MPI send with tag -1 never matched); a tag above 2**31 - 1 raises too (it was an
  OverflowError); a good send/recv then works. A send / recv to this rank itself: torch's
  ValueError "Invalid destination rank: ..." (it was the comm layer's words).
* ``join_own_collective``: DDP with uneven inputs under ``with model.join():`` and an
  all_reduce of the loss for logging in the loop (torch hangs): the collective mismatch
  raised on both ranks (in the block / in the joined rank's shadowing) carries a note naming
  the unshadowed collective and the fix (it said only which calls differed); the same under
  torch's generic ``Join([model, ZeroRedundancyOptimizer])``, in its words.
* ``ddp_uneven_then_collective``: DDP with one batch more on rank 1, no ``join()``, then an
  all_reduce of the epoch's loss (torch hangs): the mismatch on both ranks now says the
  op=avg all_reduce is DDP's gradient reduction and names ``with model.join():`` (it named
  only the two calls).
* ``used_after_destroy``: an async all_reduce on a group, the group destroyed, then
  ``wait()``: the values (the wait wrote to the freed window: a segmentation fault); a DDP
  model trained after ``destroy_process_group()``: a CommError naming the destroyed group
  and the fix (a segmentation fault).
* ``dcp_on_one_rank``: ``dcp.save`` on rank 0 only, then ``dcp.load`` on every rank: the
  save's exchange meets the load's; both ranks raise the same CheckpointException naming
  each rank's step (they raised unrelated TypeErrors); a save on every rank then works.
"""

import os
import warnings

import numpy as np

import shardflow as torch
import shardflow.distributed as dist
import shardflow.distributed.checkpoint as dcp
import shardflow.nn as nn
from shardflow.comm import CommError
from shardflow.distributed.algorithms.join import Join
from shardflow.distributed.optim import ZeroRedundancyOptimizer
from shardflow.nn.parallel import DistributedDataParallel as DDP


def _expect(case, r, exc, *needles, fn):
    """``fn()`` raises ``exc`` with every needle in its message on this rank."""
    try:
        fn()
    except exc as e:
        for needle in needles:
            assert needle in str(e), (case, needle, str(e))
    else:
        raise AssertionError(f"{case}: no {exc.__name__} on rank {r}")


def _ok(case, r):
    dist.barrier()
    print(f"OK {case} {r}", flush=True)


def _skipped(r, fn, name):
    """``fn()`` on a rank outside the group: returns None (recv: -1), warns torch's words."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    assert [(w.category, str(w.message)) for w in got] == [
        (UserWarning, f"Running {name} on global rank {r} which does not belong to the given "
                      "group.")], (name, got)
    return out


def _outside_group(r):
    g = dist.new_group([0])
    t = torch.full((2,), float(r + 1))
    if r == 0:
        assert (dist.get_rank(g), dist.get_world_size(g)) == (0, 1)
        dist.all_reduce(t, group=g)
        dist.broadcast(t, 0, group=g)
        out = [torch.zeros(2)]
        dist.all_gather(out, t, group=g)
        assert out[0].tolist() == [1.0, 1.0]
    else:
        assert (dist.get_rank(g), dist.get_world_size(g)) == (-1, -1)
        assert _skipped(r, lambda: dist.all_reduce(t, group=g), "all_reduce") is None
        assert _skipped(r, lambda: dist.all_reduce(t, group=g, async_op=True),
                        "all_reduce") is None
        assert _skipped(r, lambda: dist.broadcast(t, 0, group=g), "broadcast") is None
        assert _skipped(r, lambda: dist.all_gather([t], t, group=g), "all_gather") is None
        assert _skipped(r, lambda: dist.reduce_scatter_tensor(t, t, group=g),
                        "reduce_scatter_single") is None
        assert _skipped(r, lambda: dist.barrier(group=g), "barrier") is None
        assert _skipped(r, lambda: dist.reduce(t, 0, group=g), "reduce") is None
        assert _skipped(r, lambda: dist.all_gather_object([None], 1, group=g),
                        "all_gather_object") is None
        assert _skipped(r, lambda: dist.recv(t, 0, group=g), "recv") == -1
        assert _skipped(r, lambda: dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 0, g)]),
                        "isend") == []
        assert t.tolist() == [2.0, 2.0]  # nothing written
        _expect("outside_group", r, ValueError, "Global rank 1 is not part of the group",
                "dist.get_rank(group) >= 0", fn=lambda: dist.get_process_group_ranks(g))
        _expect("outside_group", r, ValueError, "Invalid process group specified",
                fn=lambda: dist.get_backend(g))
    dist.destroy_process_group(g)  # rank 1: nothing to destroy (torch: a no-op)
    _ok("outside_group", r)


def _destroyed_group(r):
    g = dist.new_group([0, 1])
    dist.all_reduce(torch.ones(1), group=g)
    dist.destroy_process_group(g)
    t = torch.ones(2)
    for fn in (lambda: dist.all_reduce(t, group=g), lambda: dist.barrier(group=g),
               lambda: dist.get_rank(g)):
        _expect("destroyed_group", r, ValueError, "is not registered, please create group with "
                "torch.distributed.new_group API", "dist.new_group(ranks)", fn=fn)
    _expect("destroyed_group", r, ValueError, "Invalid process group specified",
            "already destroyed", fn=lambda: dist.destroy_process_group(g))
    assert t.tolist() == [1.0, 1.0]
    _ok("destroyed_group", r)
    world = dist.group.WORLD
    dist.destroy_process_group()
    _expect("destroyed_group", r, ValueError, "is not registered",
            fn=lambda: dist.all_reduce(t, group=world))
    dist.init_process_group("gloo")
    _expect("destroyed_group", r, ValueError, "is not registered",
            fn=lambda: dist.all_reduce(t, group=world))
    t = torch.ones(2)
    dist.all_reduce(t)  # the new world works
    assert np.array_equal(t.numpy(), [2.0, 2.0])
    _ok("destroyed_group_world", r)


def _p2p_bad_tag(r):
    peer, t = 1 - r, torch.zeros(2)
    bad = [lambda: dist.send(t, peer, tag=-1), lambda: dist.recv(t, peer, tag=-1),
           lambda: dist.isend(t, peer, tag=-1), lambda: dist.irecv(t, None, tag=-1),
           lambda: dist.batch_isend_irecv([dist.P2POp(dist.isend, t, peer, tag=-1)])]
    for fn in bad:
        _expect("p2p_bad_tag", r, RuntimeError, "Tag must be nonnegative", "pass a tag >= 0",
                fn=fn)
    _expect("p2p_bad_tag", r, RuntimeError, "tag 2147483648 is above the largest tag "
            "2147483647", fn=lambda: dist.send(t, peer, tag=2**31))
    if r == 0:
        dist.send(torch.ones(2), 1, tag=2**31 - 1)
    else:
        dist.recv(t, 0, tag=2**31 - 1)
        assert t.tolist() == [1.0, 1.0]
    for fn, role in ((lambda: dist.send(t, r), "destination"), (lambda: dist.recv(t, r), "source"),
                     (lambda: dist.isend(t, r), "destination"), (lambda: dist.irecv(t, r), "source")):
        _expect("p2p_bad_tag", r, ValueError, f"Invalid {role} rank: {role} rank should not be "
                "the same as the rank of the current process.", "pass the peer's rank", fn=fn)
    _ok("p2p_bad_tag", r)


def _join_own_collective(r):
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def uneven_loop_with_a_logging_all_reduce():
        with model.join():
            for _ in range(2 + r):  # rank 1 has one batch more
                loss = model(torch.randn(2, 4)).sum()
                loss.backward()
                opt.step()
                opt.zero_grad()
                dist.all_reduce(loss.detach().clone())  # not shadowed by the joined rank

    _expect_join_note("join_own_collective", r, uneven_loop_with_a_logging_all_reduce,
                      "`with model.join():`")

    # torch's generic Join over DDP and ZeroRedundancyOptimizer: the same, with its own words
    model = DDP(nn.Linear(4, 1))
    zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.1)

    def generic_join_loop():
        with Join([model, zero]):
            for _ in range(2 + r):
                loss = model(torch.randn(2, 4)).sum()
                loss.backward()
                zero.step()
                dist.all_reduce(loss.detach().clone())

    _expect_join_note("join_own_collective_generic", r, generic_join_loop, "`with Join([...]):`")


def _expect_join_note(case, r, fn, context):
    """``fn()`` raises a collective mismatch whose note names the join ``context``."""
    try:
        fn()
    except CommError as e:
        assert "collective mismatch" in str(e), e
        notes = getattr(e, "__notes__", None)
        if hasattr(e, "add_note"):  # Python 3.11+
            assert notes and f"This collective ran inside {context}" in notes[0], notes
            assert "A rank whose inputs ran out shadows only " in notes[0], notes
            assert "Make your own collectives after the join block" in notes[0], notes
    else:
        raise AssertionError(f"{case}: no CommError on rank {r}")
    _ok(case, r)


def _ddp_uneven_then_collective(r):
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    total = torch.zeros(1)

    def uneven_loop_then_all_reduce():
        for _ in range(2 + r):  # rank 1 has one batch more
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()
            total.add_(loss.detach())
        dist.all_reduce(total)

    _expect("ddp_uneven_then_collective", r, CommError, "rank 0: all_reduce(shape=(1,), "
            "dtype=float32, op=sum)", "rank 1: all_reduce(shape=(5,), dtype=float32, op=avg)",
            "An all_reduce with op=avg is DistributedDataParallel's gradient reduction",
            "wrap the training loop in `with model.join():`", fn=uneven_loop_then_all_reduce)
    _ok("ddp_uneven_then_collective", r)


def _dcp_on_one_rank(r, folder):
    target = {"b": torch.zeros(3)}

    def save_on_rank0_then_load():
        if r == 0:
            dcp.save({"b": torch.ones(3)}, checkpoint_id=folder)
        dcp.load(target, checkpoint_id=folder)

    _expect("dcp_on_one_rank", r, dcp.CheckpointException,
            "the ranks are not in the same checkpoint call (rank 0: dcp.save (plans); rank 1: "
            "dcp.load (plan))", "call each on every rank of the group", fn=save_on_rank0_then_load)
    assert target["b"].tolist() == [0.0, 0.0, 0.0]
    assert not os.path.exists(os.path.join(folder, "index.json"))  # nothing committed
    dcp.save({"b": torch.ones(3)}, checkpoint_id=folder)
    dcp.load(target, checkpoint_id=folder)
    assert target["b"].tolist() == [1.0, 1.0, 1.0]
    _ok("dcp_on_one_rank", r)


def _used_after_destroy(r):
    g = dist.new_group([0, 1])
    t = torch.ones(1000) * (r + 1)  # beyond the 3 KB small path: a separate data step
    work = dist.all_reduce(t, group=g, async_op=True)
    dist.destroy_process_group(g)
    work.wait()
    assert t.tolist() == [3.0] * 1000
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    dist.barrier()
    print(f"OK used_after_destroy_work {r}", flush=True)
    dist.destroy_process_group()

    def backward_after_destroy():
        model(torch.randn(2, 4)).sum().backward()

    _expect("used_after_destroy", r, CommError, "all_reduce on a destroyed process group (rank "
            f"{r}): destroy_process_group() freed this group", "build the object anew",
            fn=backward_after_destroy)
    print(f"OK used_after_destroy {r}", flush=True)


def main(argv):
    dist.init_process_group("gloo")
    r = dist.get_rank()
    _outside_group(r)
    _destroyed_group(r)
    _p2p_bad_tag(r)
    _join_own_collective(r)
    _ddp_uneven_then_collective(r)
    _dcp_on_one_rank(r, argv[0])
    _used_after_destroy(r)  # the last case: it destroys the world
