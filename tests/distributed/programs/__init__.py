"""The rank programs of tests/distributed: one module per program, named for what it checks.

Each has a ``main(argv)`` with the body (plain ``assert`` statements, shown with their values
by ``shardflow.testing.rank_program``'s assertion rewriting) and runs on N real ranks through
``shardflow.testing.mpi.run_program("tests.distributed.programs.NAME", n, args=...)``; nothing
runs at import. ``_common`` holds what several programs share. To run one by hand:
``python -m shardflow run -n 2 -m shardflow.testing.rank_program
tests.distributed.programs.NAME ARGS``. docs/ARCHITECTURE.md ("Multi-rank tests") has the
conventions.
"""
