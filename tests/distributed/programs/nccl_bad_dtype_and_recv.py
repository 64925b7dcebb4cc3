"""The NCCL communicator (fake NCCL) explains a dtype NCCL has no type for (prints
``TYPE {message}`` on every rank) and a recv whose buffer differs from what was sent (prints
``P2P {message}`` on the receiving rank)."""

import numpy as np

from shardflow import comm
from tests.doubles.fake_nccl import to_device

from ._fake_nccl import fake_nccl_world


def main(argv):
    w, _ = fake_nccl_world()
    try:
        w.all_reduce(to_device(np.zeros(3, np.complex64)), "sum")
    except TypeError as e:
        print("TYPE", str(e), flush=True)
    p = to_device(np.zeros(3, np.float32))
    try:
        if w.rank == 0:
            w.send(p, 1)
        else:
            w.recv(to_device(np.zeros(5, np.float32)), 0)
    except comm.CommError as e:
        print("P2P", str(e), flush=True)
