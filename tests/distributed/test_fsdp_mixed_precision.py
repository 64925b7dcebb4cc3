"""MixedPrecisionPolicy casts under fully_shard on 2 ranks against one process doing the same
casts (tests/distributed/programs/fsdp_mixed_precision.py); PyTorch FSDP2 itself on gloo is
compared in tests/parity (the FSDP2 example with --mixed-precision)."""

from shardflow.testing.mpi import run_program


def test_mixed_precision_policy_matches_one_process_with_the_same_casts():
    run_program("tests.distributed.programs.fsdp_mixed_precision", n=2, timeout=240).check()
