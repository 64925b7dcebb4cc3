"""PyTorch's distributed module paths map one to one onto shardflow (issue 27): every name of
torch 2.13's module (its ``__all__``, or the names its examples import) is importable from the
shardflow path, except the ones listed as not provided (checked to be still missing, so the
list stays true); and the one-process semantics of what these modules hold: Shard/Replicate/
Partial, SDPBackend and sdpa_kernel, the backend names, ``get_backend`` in a world of one,
and the pipelining front end's split (against torch's ``pipeline`` on the same model)."""

import importlib

import numpy as np
import pytest

import shardflow as sf

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.export's notes

# (torch path, shardflow path, names PyTorch has that shardflow does not provide)
PATHS = [
    ("torch.distributed.tensor", "shardflow.distributed.tensor", set()),
    ("torch.distributed.tensor.parallel", "shardflow.distributed.tensor.parallel", set()),
    ("torch.distributed.tensor.parallel.style", "shardflow.distributed.tensor.parallel.style", set()),
    ("torch.distributed.tensor.parallel.loss", "shardflow.distributed.tensor.parallel.loss", set()),
    ("torch.distributed.tensor.placement_types", "shardflow.distributed.tensor.placement_types",
     set()),
    ("torch.distributed.tensor.device_mesh", "shardflow.distributed.tensor.device_mesh", set()),
    ("torch.distributed.tensor.experimental", "shardflow.distributed.tensor.experimental",
     {"context_parallel", "register_sharding"}),
    ("torch.distributed.device_mesh", "shardflow.distributed.device_mesh", set()),
    ("torch.distributed._tensor.device_mesh", "shardflow.distributed._tensor.device_mesh", set()),
    ("torch.distributed.pipelining", "shardflow.distributed.pipelining", set()),
    ("torch.nn.attention", "shardflow.nn.attention",
     {"WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
      "activate_flash_attention_impl", "list_flash_attention_impls",
      "current_flash_attention_impl", "restore_flash_attention_impl"}),
]

# modules without __all__: the names PyTorch's programs import from them
NAMED = [
    ("torch.distributed._tensor", "shardflow.distributed._tensor",
     ["DTensor", "DeviceMesh", "Partial", "Placement", "Replicate", "Shard", "distribute_module",
      "distribute_tensor", "init_device_mesh", "ones", "zeros", "empty", "full", "rand",
      "randn"]),
    ("torch.distributed._tensor.placement_types", "shardflow.distributed._tensor.placement_types",
     ["Placement", "Shard", "Replicate", "Partial"]),
    ("torch.distributed._tensor.api", "shardflow.distributed._tensor.api",
     ["DTensor", "distribute_tensor", "distribute_module"]),
    ("torch.distributed.nn", "shardflow.distributed.nn",
     ["all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast", "gather",
      "reduce", "reduce_scatter", "scatter", "ReduceOp"]),
    ("torch.distributed.nn.functional", "shardflow.distributed.nn.functional",
     ["all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast", "gather",
      "reduce", "reduce_scatter", "scatter"]),
    ("torch.distributed", "shardflow.distributed",
     ["Backend", "group", "get_default_backend_for_device", "get_backend", "is_gloo_available",
      "is_nccl_available", "is_mpi_available", "is_backend_available", "get_process_group_ranks",
      "get_global_rank", "get_group_rank", "get_node_local_rank", "reduce", "gather", "scatter",
      "all_to_all", "gather_object", "scatter_object_list", "monitored_barrier",
      "default_pg_timeout", "DeviceMesh", "init_device_mesh", "device_mesh"]),
]


@pytest.mark.parametrize("tpath, spath, missing", PATHS, ids=[p[0] for p in PATHS])
def test_module_has_torch_names(tpath, spath, missing):
    tmod, smod = importlib.import_module(tpath), importlib.import_module(spath)
    want = set(tmod.__all__)
    have = {n for n in want if hasattr(smod, n)}
    assert want - have == missing, f"{spath}: lacks {sorted(want - have - missing)}"
    assert not any(hasattr(smod, n) for n in missing), "a name listed as missing exists now"


@pytest.mark.parametrize("tpath, spath, names", NAMED, ids=[p[0] for p in NAMED])
def test_module_has_the_names_programs_import(tpath, spath, names):
    tmod, smod = importlib.import_module(tpath), importlib.import_module(spath)
    for n in names:
        assert hasattr(tmod, n), f"torch has no {tpath}.{n}: fix the list"
        assert hasattr(smod, n), f"{spath}.{n} is missing"


def test_attribute_paths_as_torch():
    """``torch.nn.attention`` and ``torch.distributed.device_mesh`` are attributes after
    ``import torch`` alone, so programs use them without importing the submodule."""
    assert sf.nn.attention.sdpa_kernel is not None
    assert sf.distributed.device_mesh.init_device_mesh is sf.distributed.init_device_mesh


def test_placement_types_behave_as_torch():
    import torch.distributed.tensor as tdt

    import shardflow.distributed.tensor as sdt

    for lib in (tdt, sdt):
        s0 = lib.Shard(0)
        assert s0 == lib.Shard(0) and s0 != lib.Shard(1) and s0 != lib.Replicate()
        assert isinstance(s0, lib.Shard) and isinstance(s0, lib.Placement) and s0.dim == 0
        assert s0.is_shard() and s0.is_shard(0) and not s0.is_shard(1) and not s0.is_replicate()
        assert lib.Replicate() == lib.Replicate() and lib.Replicate().is_replicate()
        assert isinstance(lib.Replicate(), lib.Placement) and not lib.Replicate().is_shard()
        assert lib.Partial() == lib.Partial("sum") == lib.Partial(reduce_op="sum")
        assert lib.Partial().is_partial() and lib.Partial().reduce_op == "sum"
        assert len({lib.Shard(0), lib.Shard(0), lib.Replicate(), lib.Replicate()}) == 2
    from shardflow.distributed import sbp

    assert sdt.Shard(1) == sbp.split(1) and sdt.Replicate() == sbp.broadcast
    assert sdt.Partial() == sbp.partial_sum
    with pytest.raises(ValueError, match="'sum' or 'max'"):
        sdt.Partial(reduce_op="avg")


def test_sdpa_kernel_accepts_what_torch_accepts():
    from torch.nn.attention import SDPBackend as TB
    from torch.nn.attention import sdpa_kernel as t_kernel

    from shardflow.nn.attention import SDPBackend, sdpa_kernel

    assert {k: v.value for k, v in SDPBackend.__members__.items()} == \
        {k: int(v) for k, v in TB.__members__.items()}
    assert str(SDPBackend.MATH) == str(TB.MATH) and repr(SDPBackend.MATH) == repr(TB.MATH)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3))
    with t_kernel([TB.FLASH_ATTENTION, TB.MATH]):
        want = torch.nn.functional.scaled_dot_product_attention(
            *map(torch.tensor, (q, k, v)), is_causal=True).numpy()
    for backends in (SDPBackend.MATH, [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        with sdpa_kernel(backends, set_priority=True):
            got = sf.nn.functional.scaled_dot_product_attention(
                *map(sf.tensor, (q, k, v)), is_causal=True).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # no backend allowed: no kernel, in both (tests/ops/test_sdpa_kernels_bias_layout.py)
    for lib, kernel, f, tensor in ((torch, t_kernel, torch.nn.functional, torch.tensor),
                                   (sf, sdpa_kernel, sf.nn.functional, sf.tensor)):
        with kernel([]), pytest.raises(RuntimeError, match="No viable backend"):
            f.scaled_dot_product_attention(*map(tensor, (q, k, v)))
    for lib_kernel in (t_kernel, sdpa_kernel):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
            with lib_kernel("math"):
                pass


def test_backend_names_as_torch():
    import torch.distributed as tdist

    import shardflow.distributed as dist

    for dev in ("cpu", "cuda", "cuda:1"):
        assert dist.get_default_backend_for_device(dev) == tdist.get_default_backend_for_device(dev)
    assert dist.get_default_backend_for_device(sf.device("cpu")) == \
        tdist.get_default_backend_for_device(torch.device("cpu"))
    for lib in (tdist, dist):
        with pytest.raises(ValueError, match="Default backend not registered for device : meta"):
            lib.get_default_backend_for_device("meta")
        assert lib.Backend("GLOO") == "gloo" == lib.Backend.GLOO and lib.Backend.NCCL == "nccl"
        assert lib.Backend("Foo") == "foo"  # any name (third-party backends)
    assert dist.group.WORLD is None  # the default group, as the collectives' group=None
    with pytest.raises(ValueError, match="unknown backend 'foo'; expected 'mpi', 'gloo', 'nccl'"):
        dist.init_process_group("foo")
    assert not dist.is_initialized()


@pytest.mark.parametrize("asked", ["gloo", "nccl", "cpu:gloo,cuda:nccl", "mpi"])
def test_get_backend_reports_the_name_asked_for(asked):
    """A world of one (no launcher): before, ``init_process_group("gloo")`` reported the engine
    ("local"/"mpi"); torch reports the name it was given, for the world and its sub-groups."""
    import shardflow.distributed as dist

    dist.init_process_group(asked)
    try:
        assert dist.get_backend() == asked
        assert dist.get_backend(dist.new_group([0])) == asked
        assert dist.is_initialized()
    finally:
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.get_backend()


# -- the pipelining front end: the split, against torch's pipeline() ------------------------


def _chain_model(lib, dims=(4, 6, 6, 6, 3)):
    class Block(lib.nn.Module):  # PyTorch's pipelining docs' block: ops inside are fine
        def __init__(self, a, b):
            super().__init__()
            self.lin = lib.nn.Linear(a, b)

        def forward(self, x):
            return lib.relu(self.lin(x))

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = lib.nn.ModuleList([Block(a, b) for a, b in zip(dims[:-2], dims[1:-1])])
            self.output_proj = lib.nn.Linear(dims[-2], dims[-1])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.output_proj(x)

    return Net()


@pytest.mark.parametrize("spec", [
    {"layers.1": "BEGINNING"}, {"layers.1": "END"}, {"layers.1": "BEGINNING", "layers.2": "BEGINNING"},
])
def test_pipeline_split_matches_torch(spec):
    from torch.distributed.pipelining import SplitPoint as TSplit
    from torch.distributed.pipelining import pipeline as t_pipeline

    from shardflow.distributed.pipelining import SplitPoint, pipeline

    torch.manual_seed(0)
    tm = _chain_model(torch)
    sm = _chain_model(sf)
    sm.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    tp = t_pipeline(tm, (torch.tensor(x),), split_spec={k: TSplit[v] for k, v in spec.items()})
    sp = pipeline(sm, (sf.tensor(x),), split_spec={k: SplitPoint[v] for k, v in spec.items()})
    assert sp.num_stages == tp.num_stages
    h_s, h_t = sf.tensor(x), torch.tensor(x)
    for i in range(sp.num_stages):
        s_names = [n for n, _ in sp.get_stage_module(i).named_parameters()]
        t_names = [n for n, _ in tp.get_stage_module(i).named_parameters()]
        assert s_names == t_names, (i, s_names, t_names)
        h_s, h_t = sp.get_stage_module(i)(h_s), tp.get_stage_module(i)(h_t)
    np.testing.assert_allclose(h_s.numpy(), h_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_s.numpy(), sm(sf.tensor(x)).numpy(), rtol=1e-6)


def test_pipeline_cuts_at_pipe_split_calls_and_markers():
    from shardflow.distributed.pipelining import pipe_split, pipeline

    class Net(sf.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = sf.nn.Linear(3, 3), sf.nn.Linear(3, 3), sf.nn.Linear(3, 3)

        def forward(self, x):
            x = self.a(x)
            pipe_split()  # PyTorch's in-forward marker
            return self.c(self.b(x))

    x, net = sf.randn(2, 3), Net()
    state = sf.get_rng_state()
    pipe = pipeline(net, (x,))
    assert [st._chain_names for st in pipe.stages] == [["a"], ["b", "c"]]
    assert np.array_equal(np.asarray(sf.get_rng_state()), np.asarray(state))  # nothing drawn
    seq = sf.nn.Sequential(sf.nn.Linear(3, 3), pipe_split(), sf.nn.Linear(3, 3), sf.nn.Linear(3, 3))
    pipe = pipeline(seq, (x,))
    assert [st._chain_names for st in pipe.stages] == [["0"], ["2", "3"]]
    np.testing.assert_allclose(pipe.stages[1](pipe.stages[0](x)).numpy(), seq(x).numpy())


def test_pipeline_refuses_what_is_not_a_chain():
    from shardflow.distributed.pipelining import SplitPoint, pipeline

    class Residual(sf.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = sf.nn.ModuleList([sf.nn.Linear(3, 3) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = x + layer(x)
            return x

    with pytest.raises(ValueError, match="between 'layers.0' and 'layers.1'.*not a chain"):
        pipeline(Residual(), (sf.randn(2, 3),), split_spec={"layers.1": SplitPoint.BEGINNING})
    with pytest.raises(ValueError, match="not a submodule"):
        pipeline(Residual(), (sf.randn(2, 3),), split_spec={"layers.7": SplitPoint.BEGINNING})
    with pytest.raises(ValueError, match="no split point"):
        pipeline(Residual(), (sf.randn(2, 3),))
