"""RRef reference counting on 3 workers (run by test_rpc_rref.py): objects live on
worker1; worker0 and worker2 hold RRefs to them; worker1 counts its live objects."""

import gc
import json
import os
import time
import weakref

import shardflow.distributed.rpc as rpc

LIVE = weakref.WeakSet()   # the Tracked objects alive in this process
KEEP = {}                  # RRefs this worker holds, by name


class Unsendable:
    pass


class Tracked:
    def __init__(self, tag):
        self.tag = tag
        LIVE.add(self)


def make(tag):
    return Tracked(tag)


def share_local(tag):
    """The owner wraps a local value and returns the RRef (early fork registration)."""
    return rpc.RRef(Tracked(tag))


def live():
    gc.collect()
    return sorted(t.tag for t in LIVE)


def debug():
    return rpc._rref_context_get_debug_info()


def keep(name, rref):
    KEEP.setdefault(name, []).append(rref)
    return len(KEEP[name])


def drop(name):
    KEEP.pop(name, None)
    gc.collect()


def confirmed(name):
    return [r.confirmed_by_owner() for r in KEEP.get(name, [])]


def on_owner(fn, *args):
    return rpc.rpc_sync("worker1", fn, args=args)


def wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def checks(R):
    # 1. remote() creates the value; the creator's fork keeps it
    a = rpc.remote("worker1", make, args=("a",))
    a._get_future().wait()
    R["created"] = [on_owner(live), on_owner(debug)["num_forks"], a.confirmed_by_owner()]
    # 2. shared with worker2 (a user -> user fork, confirmed by the owner)
    rpc.rpc_sync("worker2", keep, args=("a", a))
    R["two_forks"] = wait_for(lambda: on_owner(debug)["num_forks"] == 2)
    R["worker2_confirmed"] = wait_for(lambda: rpc.rpc_sync("worker2", confirmed, args=("a",)) == [True])
    # 3. the creator drops it: the owner keeps it for worker2 (never earlier)
    del a
    gc.collect()
    R["one_fork_left"] = wait_for(lambda: on_owner(debug)["num_forks"] == 1)
    time.sleep(0.3)
    R["kept_for_worker2"] = on_owner(live)
    # 4. worker2 drops it: freed on the owner
    rpc.rpc_sync("worker2", drop, args=("a",))
    R["freed"] = wait_for(lambda: on_owner(live) == [] and on_owner(debug)["num_owner_rrefs"] == 0)
    # 5. sent and dropped at once, before worker2 told the owner: the pending child keeps it.
    # worker2's two threads are busy, so the message waits there undecoded while worker0's
    # reference goes; without the pending child, worker0's delete would free the value now.
    b = rpc.remote("worker1", make, args=("b",))
    b._get_future().wait()
    busy = [rpc.rpc_async("worker2", time.sleep, args=(0.6,)) for _ in range(2)]
    fut = rpc.rpc_async("worker2", keep, args=("b", b))
    del b
    gc.collect()
    time.sleep(0.3)
    R["kept_while_in_flight"] = on_owner(live)
    fut.wait()
    [f.wait() for f in busy]
    R["pending_child_kept"] = [on_owner(live), wait_for(
        lambda: rpc.rpc_sync("worker2", confirmed, args=("b",)) == [True])]
    rpc.rpc_sync("worker2", drop, args=("b",))
    R["pending_child_freed"] = wait_for(lambda: on_owner(live) == [])
    # 6. the owner hands out its own RRef(value): alive while worker0 holds it
    c = rpc.rpc_sync("worker1", share_local, args=("c",))
    R["owner_shared"] = [c.owner_name(), c.confirmed_by_owner(), on_owner(live)]
    del c
    gc.collect()
    R["owner_shared_freed"] = wait_for(lambda: on_owner(live) == [])
    # 7. one RRef sent three times: three forks, all released
    d = rpc.remote("worker1", make, args=("d",))
    for _ in range(3):
        rpc.rpc_sync("worker2", keep, args=("d", d))
    R["three_more_forks"] = wait_for(lambda: on_owner(debug)["num_forks"] == 4)
    rpc.rpc_sync("worker2", drop, args=("d",))
    R["back_to_one"] = wait_for(lambda: on_owner(debug)["num_forks"] == 1)
    R["d_alive"] = on_owner(live)
    # a message that cannot be encoded takes back the fork it made for d (else the pending
    # child would keep d alive for ever)
    try:
        rpc.rpc_sync("worker2", keep, args=("d", d, Unsendable()))
        R["unsendable"] = "sent"
    except TypeError:
        R["unsendable"] = debug()["num_pending_children"]
    del d
    gc.collect()
    R["d_freed"] = wait_for(lambda: on_owner(live) == [] and on_owner(debug)["num_owner_rrefs"] == 0)
    # 8. a user RRef still held at shutdown: deleted by shutdown (checked by worker1 after it)
    e = rpc.remote("worker1", make, args=("e",))
    rpc.rpc_sync("worker2", keep, args=("e", e))
    R["e_alive"] = on_owner(live)


def main():
    rank = int(os.environ["RANK"])
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=int(os.environ["WORLD_SIZE"]),
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(num_worker_threads=2))
    R = {"rank": rank}
    if rank == 0:
        checks(R)
    rpc.shutdown()
    KEEP.clear()
    if rank == 1:
        R["live_after_shutdown"] = live()
    print("RESULT " + json.dumps(R), flush=True)


if __name__ == "__main__":
    main()
