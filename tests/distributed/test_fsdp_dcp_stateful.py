"""dcp.save/load with Stateful values (shardflow.distributed.checkpoint.stateful) and the
rank-0-only optimizer state of a fully_shard model, on 2 ranks
(tests/distributed/programs/fsdp_dcp_stateful.py)."""

from shardflow.testing.mpi import run_program


def test_stateful_values_resume_a_sharded_model_and_rank0_optim_state_is_local(tmp_path):
    run_program("tests.distributed.programs.fsdp_dcp_stateful", n=2, args=[str(tmp_path)],
                timeout=180).check()
