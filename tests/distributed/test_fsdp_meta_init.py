"""fully_shard of a meta-device model (PyTorch FSDP2's init): ``to_empty`` + ``reset_parameters``
and ``load_state_dict(assign=True)`` of DTensor Parameters, on 2 ranks against one process
(tests/distributed/programs/fsdp_meta_init.py)."""

from shardflow.testing.mpi import run_program


def test_meta_model_is_sharded_then_materialised_and_trains_like_one_process():
    run_program("tests.distributed.programs.fsdp_meta_init", n=2, timeout=180).check()
