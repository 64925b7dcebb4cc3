"""torch.distributed's remaining c10d names in one process, against torch 2.13: the *Options
structs, reduce_op, BackendConfig / get_backend_config, is_ucc/xccl_available,
all_gather_single / reduce_scatter_single, split_group's checks, breakpoint, rendezvous's
error, QueueEmptyError, BuiltinCommHookType, the lazy subpackage attributes. Two ranks:
tests/distributed/test_dist_compat.py."""

import warnings

import numpy as np
import pytest

import shardflow as sf
import shardflow.distributed as dist

torch = pytest.importorskip("torch")
import torch.distributed as tdist  # noqa: E402

OPTIONS = ["AllreduceOptions", "AllreduceCoalescedOptions", "AllToAllOptions", "BarrierOptions",
           "BroadcastOptions", "GatherOptions", "ReduceOptions", "ReduceScatterOptions",
           "ScatterOptions"]


@pytest.fixture
def world():
    dist.init_process_group("gloo")
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("name", OPTIONS)
def test_options_structs_have_torchs_fields(name):
    t, s = getattr(tdist, name)(), getattr(dist, name)()
    fields = [a for a in dir(t) if not a.startswith("_")]
    assert fields == sorted(vars(s)), (fields, vars(s))
    for f in fields:
        tv, sv = getattr(t, f), getattr(s, f)
        if f == "reduceOp":
            assert sv == dist.ReduceOp.SUM and tv == tdist.ReduceOp.SUM
        elif f != "device":
            assert sv == tv, (f, sv, tv)


def test_reduce_op_backend_config_and_availability():
    with pytest.warns(FutureWarning, match="reduce_op` is deprecated"):
        assert dist.reduce_op.SUM == dist.ReduceOp.SUM
    with pytest.warns(FutureWarning, match="reduce_op` is deprecated"):  # torch's category
        assert tdist.reduce_op.SUM == tdist.ReduceOp.SUM
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert set(dist.reduce_op.__members__) <= set(tdist.reduce_op.__members__)
    from torch.distributed.distributed_c10d import BackendConfig

    for name in ("gloo", "nccl", "mpi", "GLOO", "cpu:gloo", "cpu:gloo,cuda:nccl", "undefined"):
        assert str(dist.BackendConfig(name)) == str(BackendConfig(tdist.Backend(name))), name
        assert dist.BackendConfig(name).get_device_backend_map() == \
            BackendConfig(tdist.Backend(name)).get_device_backend_map()
    assert dist.is_ucc_available() is tdist.is_ucc_available()
    assert dist.is_xccl_available() is tdist.is_xccl_available()
    assert {k: v.value for k, v in dist.BuiltinCommHookType.__members__.items()} == \
        {k: int(v) for k, v in tdist.BuiltinCommHookType.__members__.items()}
    assert [c.__name__ for c in dist.QueueEmptyError.__mro__] == \
        [c.__name__ for c in tdist.QueueEmptyError.__mro__]
    from shardflow.nn.parallel.grad_bucket import GradBucket

    assert dist.GradBucket is GradBucket
    with pytest.raises(ValueError, match="init_process_group"):
        dist.get_backend_config()


def test_rendezvous_points_to_shardflow_run():
    with pytest.raises(NotImplementedError, match="shardflow run"):
        dist.rendezvous("env://")
    with pytest.raises(NotImplementedError, match="docs/DISTRIBUTED.md"):
        dist.register_rendezvous_handler("foo", lambda *a: None)


def test_lazy_subpackages():
    assert dist.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook is not None
    assert dist.rpc.__name__ == "shardflow.distributed.rpc"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dist.nope  # noqa: B018


def test_world_of_one_collectives_and_split_group(world):
    assert dist.get_backend_config() == "cpu:gloo,cuda:gloo"
    x = sf.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = sf.zeros(2, 3)
    dist.all_gather_single(out, x)
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    rs = sf.zeros(2, 3)
    work = dist.reduce_scatter_single(rs, x, op=dist.ReduceOp.MAX, async_op=True)
    assert work.wait() and np.array_equal(rs.numpy(), x.numpy())
    with pytest.raises(ValueError, match="cannot be None or empty"):
        dist.split_group(split_ranks=[])
    with pytest.raises(ValueError, match="not a rank of the parent group"):
        dist.split_group(split_ranks=[[0, 1]])
    with pytest.raises(ValueError, match="must not overlap"):
        dist.split_group(split_ranks=[[0], [0]])
    g = dist.split_group(split_ranks=[[0]])
    assert dist.get_world_size(g) == 1 and dist.get_process_group_ranks(g) == [0]


def test_breakpoint_stops_on_its_rank_and_skips(world, monkeypatch):
    stops = []

    class FakePdb:
        def message(self, text):
            stops.append(text)

        def set_trace(self, frame=None):
            stops.append("trace")

    monkeypatch.setattr(dist, "_debugger", FakePdb)
    for _ in range(3):
        dist.breakpoint(skip=2)  # the first two calls from this line return at once
    assert len(stops) == 2 and "dist.breakpoint(rank=0)" in stops[0] and stops[1] == "trace"
    dist.breakpoint(rank=1)  # not this rank: only the barrier
    assert len(stops) == 2


def test_join_runs_ddps_join(world):
    import torch.distributed.algorithms as talg

    from shardflow.distributed.algorithms import Join, Joinable, JoinHook

    assert all(hasattr(talg, n) for n in ("Join", "Joinable", "JoinHook"))
    model = sf.nn.parallel.DistributedDataParallel(sf.nn.Linear(2, 2))
    with Join([model], divide_by_initial_world_size=False):
        assert model._join is not None and not model._join.divide_by_initial_world_size
        model(sf.ones(1, 2)).sum().backward()
    assert model._join is None and model.module.weight.grad is not None
    with pytest.raises(ValueError, match="at least one joinable"):
        Join([])
    opt = sf.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="Join got SGD, which is not a Joinable"):
        Join([model, opt])
    with pytest.raises(TypeError, match="unknown keyword"):
        Join([model], bogus=1)
    assert JoinHook().main_hook() is None and issubclass(Joinable, object)
