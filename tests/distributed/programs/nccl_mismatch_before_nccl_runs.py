"""Ranks calling different collectives on the NCCL communicator (fake NCCL) get a CommError
before NCCL is called, their arrays unchanged. Each rank prints ``MISMATCH {rank} {message}``
(the test checks that both ranks' calls are named)."""

import numpy as np

from shardflow import comm
from tests.doubles.fake_nccl import to_device

from ._fake_nccl import fake_nccl_world


def main(argv):
    w, api = fake_nccl_world()
    a = to_device(np.arange(4, dtype=np.float32) + w.rank)
    before = a.copy()
    calls = api.calls
    try:
        if w.rank == 0:
            w.all_reduce(a, "sum")
        else:
            w.broadcast(a, 0)
    except comm.CommError as e:
        assert api.calls == calls, "NCCL was called despite the mismatch"
        assert (a == before).all(), "the array changed"
        print("MISMATCH", w.rank, str(e).replace("\n", " | "), flush=True)
    else:
        raise AssertionError("no CommError for an all_reduce against a broadcast")
