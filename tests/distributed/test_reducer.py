"""The shared gradient reducer (``shardflow.nn.parallel.reducer.Reducer``).

On real ranks (``reducer_ranks.py``, 2 ranks; every check against the mean or sum of all
ranks' local gradients): bucket layout in reverse registration order with the first bucket
under its own cap; the first bucket's collective starts inside backward; ``no_sync``
accumulates and the next backward reduces the sum; a communication hook runs once per
bucket, in order; a bucket reduced in pieces, each started once its gradients are in,
large gradients reduced in place in ``p.grad`` (a hook still gets whole buckets); finalize
by the caller (Horovod's ``step()``), with an incomplete bucket launched there; the after-backward ``reduce_gradients`` with ``op="sum"``.

Global tensors (``global_ddp_ranks.py``): under ``DistributedDataParallel(device_mesh=...)``
the data-parallel gradient of a global model goes through the reducer's buckets
(``comm_plan()`` counts one all-reduce per bucket instead of one per parameter use), equal to
one process for GPT-mini (dp=2) and for a model whose parameter has a partial and a whole
use (3 ranks: the whole use is counted once).

In one process: the reducer's errors, DDP's ``device_mesh`` checks, and the one
data-parallel flag.
"""

import os

import pytest

from shardflow.testing.mpi import run_script

HERE = os.path.dirname(__file__)
CHECKS = ["bucket_order", "overlap", "no_sync", "comm_hook_once_per_bucket", "pieces",
          "manual_finalize", "unused_parameter_at_finalize", "reduce_gradients_sum"]


@pytest.fixture(scope="module")
def reducer_run():
    res = run_script(os.path.join(HERE, "reducer_ranks.py"), n=2, timeout=180).check()
    assert res.stdout.count("ALL OK") == 2, res.output
    return res.stdout


@pytest.mark.mpi
@pytest.mark.parametrize("check", CHECKS)
def test_reducer_on_two_ranks(reducer_run, check):
    for rank in (0, 1):
        assert f"PASS {check} {rank}" in reducer_run, reducer_run


@pytest.mark.mpi
@pytest.mark.parametrize("model,n", [("gpt", 2), ("mlp", 3)])
def test_global_data_parallel_goes_through_buckets(model, n):
    res = run_script(os.path.join(HERE, "global_ddp_ranks.py"), n=n, timeout=240,
                     args=[model]).check()
    assert res.stdout.count("ALL OK") == n, res.output


def _mlp():
    import shardflow as sf
    import shardflow.nn as nn

    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))


def test_reducer_errors():
    import shardflow as sf
    from shardflow import comm
    from shardflow.nn.parallel.reducer import Reducer

    with pytest.raises(ValueError, match="op must be 'avg' or 'sum'"):
        Reducer(_mlp().parameters(), comm.get_world(), op="max")
    red = Reducer(_mlp().parameters(), comm.get_world())
    with pytest.raises(TypeError, match="hook must be callable"):
        red.register_comm_hook(None, 3)
    red.register_comm_hook(None, lambda state, bucket: type("F", (), {"wait": lambda s: None})())
    with pytest.raises(RuntimeError, match="only be called once"):
        red.register_comm_hook(None, lambda state, bucket: None)
    m = _mlp()
    red = Reducer(m.parameters(), comm.get_world(), bucket_cap_mb=1e-9)  # one parameter each
    red.register_comm_hook(None, lambda state, bucket: type("F", (), {"wait": lambda s: None})())
    with pytest.raises(RuntimeError, match="future of bucket 0 gave None"):
        m(sf.randn(2, 4)).sum().backward()


def test_unfinished_reduction_names_the_parameters():
    import shardflow as sf
    from shardflow import comm
    from shardflow.nn.parallel.reducer import Reducer

    m = _mlp()
    names = [n for n, _ in m.named_parameters()]
    red = Reducer(m.parameters(), comm.get_world(), names=names, bucket_cap_mb=1e-9)
    (m[0](sf.randn(2, 4)).sum()).backward()  # the last Linear gets no gradient
    assert red.touched
    with pytest.raises(RuntimeError, match=r"did not receive grad for rank 0: 2\.weight, 2\.bias"):
        red.raise_unfinished()
    assert not red.touched  # reset, so training can go on


def test_ddp_device_mesh_checks():
    from shardflow import comm
    from shardflow.distributed import init_device_mesh
    from shardflow.nn.parallel import DistributedDataParallel as DDP

    with pytest.raises(RuntimeError, match="must be 1-D"):
        DDP(_mlp(), device_mesh=init_device_mesh("cpu", (1, 1)))
    with pytest.raises(RuntimeError, match="both process_group and device_mesh"):
        DDP(_mlp(), device_mesh=init_device_mesh("cpu", (1,)), process_group=comm.get_world())
    ddp = DDP(_mlp(), device_mesh=init_device_mesh("cpu", (1,), mesh_dim_names=("dp",)))
    assert ddp.process_group is comm.get_world()


def test_one_data_parallel_flag():
    """DataLoaders and comm read the same flag: setting it through either name is seen by both."""
    import shardflow.data as sfd
    from shardflow import comm
    from shardflow.data import _world

    assert not comm.data_parallel_active() and not _world.data_parallel_active()
    try:
        sfd.note_data_parallel(True)
        assert comm.data_parallel_active() and _world.data_parallel_active()
        comm.set_data_parallel(False)
        assert not _world.data_parallel_active()
    finally:
        comm.set_data_parallel(False)
