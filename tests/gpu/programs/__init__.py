"""The rank programs of tests/gpu (run by ``shardflow.testing.mpi.run_program``; also by
tests/host_cuda on CuPy's host stand-in). Nothing runs at import."""
