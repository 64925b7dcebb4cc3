"""Helpers for testing code built on shardflow: ``gradcheck`` (float64 finite differences),
``mpi`` (run code on N real ranks), ``opspec`` (op spec tables), ``parity`` (a PyTorch file
run with its imports changed). The CuPy and NCCL stand-ins of shardflow's own tests are not
shipped: they live in the repository's ``tests/doubles``."""
