"""Helpers for testing code built on shardflow: torch's ``assert_close`` and ``make_tensor``
(``torch.testing``, PyTorch's rules and messages; ``FileCheck`` refuses: ``filecheck.py``), and shardflow's own: ``gradcheck`` (float64
finite differences), ``mpi`` (run code on N real ranks), ``opspec`` (op spec tables),
``parity`` (a PyTorch file run with its imports changed). The CuPy and NCCL stand-ins of
shardflow's own tests are not shipped: they live in the repository's ``tests/doubles``."""

from .allclose import assert_allclose
from .comparison import assert_close
from .creation import make_tensor
from .filecheck import FileCheck

__all__ = ["assert_close", "assert_allclose", "make_tensor", "FileCheck"]
