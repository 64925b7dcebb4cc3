"""Two workers that stay up while the test attacks worker1 (test_rpc_security.py): worker1
prints its listening address, both wait for the test's go-ahead file, then worker0 checks
that worker1 still serves and whether any refused message ran ``mark``."""

import json
import os
import sys
import time

import shardflow.distributed.rpc as rpc

MARKS = []


def mark(tag, value=None):
    """The side effect an attacker would want: recorded if it ever runs."""
    MARKS.append(tag)
    return tag


def marks():
    return list(MARKS)


def main():
    rank = int(os.environ["RANK"])
    go = sys.argv[1]
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
    R = {"rank": rank}
    if rank == 1:
        print("ADDR " + json.dumps(rpc._get_debug_info()["listen_address"]), flush=True)
    end = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < end:
        time.sleep(0.05)
    if rank == 0:
        R["healthy"] = rpc.rpc_sync("worker1", mark, args=("from-worker0",))
        R["marks"] = rpc.rpc_sync("worker1", marks)
    rpc.shutdown()
    print("RESULT " + json.dumps(R), flush=True)


if __name__ == "__main__":
    main()
