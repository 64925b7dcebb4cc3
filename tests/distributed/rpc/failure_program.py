"""Failures (run by test_rpc_failures.py; argv[1] picks the scenario). Each worker prints
what it saw and how long each step took; none may hang.

* ``dead_peer`` (3 workers): worker2 dies right after init; worker0 calls it (rpc_sync,
  remote + to_here) and both live workers shut down.
* ``mid_call`` (2 workers): worker1 dies while running worker0's call.
* ``leader_dead`` (3 workers): worker0 (rank 0, the rendezvous leader) dies after init;
  worker1 and worker2 still call each other and shut down.
"""

import json
import os
import socket
import sys
import threading
import time

import shardflow as torch
import shardflow.distributed.rpc as rpc


def die_after(t):
    time.sleep(t)
    os._exit(1)


def add(a, b):
    return a + b


PEER_DONE = threading.Event()


def peer_done():
    """leader_dead: the other worker has finished its calls (so this one may shut down)."""
    PEER_DONE.set()


def wait_until_gone(host, port, limit=30.0):
    """Until rank 0's listening port refuses connections (it has exited)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            return
        time.sleep(0.05)


def timed(R, key, fn):
    t0 = time.monotonic()
    try:
        R[key] = ["ok", repr(fn())]
    except Exception as e:
        R[key] = [type(e).__name__, str(e)]
    R[key].append(time.monotonic() - t0)


def main():
    mode = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world,
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(rpc_timeout=30))
    R = {"rank": rank}
    if mode == "dead_peer":
        if rank == 2:
            os._exit(0)
        if rank == 0:
            from shardflow.distributed.rpc.agent import current_agent

            wait_until_gone(*current_agent().addresses[2])   # worker2 has exited
            timed(R, "call_dead", lambda: rpc.rpc_sync("worker2", add, args=(1, 2)))
            timed(R, "remote_dead", lambda: rpc.remote("worker2", add, args=(1, 2)).to_here())
            timed(R, "live_still_works", lambda: rpc.rpc_sync("worker1", add, args=(1, 2)))
    elif mode == "mid_call":
        if rank == 0:
            timed(R, "mid_call", lambda: rpc.rpc_sync("worker1", die_after, args=(0.5,)))
            timed(R, "after", lambda: rpc.rpc_sync("worker1", add, args=(1, 2)))
    elif mode == "leader_dead":
        if rank == 0:
            os._exit(0)
        wait_until_gone(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
        other = "worker2" if rank == 1 else "worker1"
        timed(R, "peer_call", lambda: rpc.rpc_sync(other, add, args=(torch.ones(1), 1)).item())
        timed(R, "leader_call", lambda: rpc.rpc_sync("worker0", add, args=(1, 2)))
        # Without the leader, shutdown has no barrier to wait on: without this handshake one
        # worker could shut down while the other's call to it is still under way.
        try:
            rpc.rpc_sync(other, peer_done)
        except RuntimeError:
            pass  # the peer saw our mark and shut down before its answer left
        R["peer_done"] = PEER_DONE.wait(30)
    timed(R, "shutdown", rpc.shutdown)
    print("RESULT " + json.dumps(R), flush=True)


if __name__ == "__main__":
    main()
