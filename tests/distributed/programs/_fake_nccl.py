"""For the NCCL-logic programs: an NCCL communicator over MPI whose device side is the fake
NCCL (``tests.doubles.fake_nccl``: NCCL's calls on host memory through MPI)."""

from shardflow.comm.mpi import MPICommunicator
from shardflow.comm.nccl import NCCLCommunicator
from tests.doubles.fake_nccl import FakeCudaAPI


def fake_nccl_world(**fake_options):
    """(the NCCL communicator of every rank, its FakeCudaAPI, whose ``calls`` counts)."""
    api = FakeCudaAPI(**fake_options)
    return NCCLCommunicator(MPICommunicator(), api=api), api
