"""The rank programs of tests/host_cuda: ``device="cuda"`` and backend ``"nccl"`` without a
GPU. Each program's ``main(argv)`` first calls ``_common.install_host_cuda()`` (CuPy's host
stand-in as the CUDA array module, the fake NCCL carrying NCCL's calls over MPI), then runs
its body; the tests start them with ``shardflow.testing.mpi.run_program(
"tests.host_cuda.programs.NAME", n, args=...)``. Nothing runs at import.
"""
