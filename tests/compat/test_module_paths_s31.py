"""torch module paths programs import that shardflow lacked (session 31): ``torch.nn.common_types``,
``torch.nn.grad``, ``torch.backends.mkldnn`` / ``mkl`` / ``openmp`` / ``cpu``,
``torch.distributed.distributed_c10d``, ``torch.utils.cpp_extension``, ``torch.optim.adamw``
(``torch.utils.flop_counter``: test_flop_counter.py). Each against torch 2.13 on this machine."""

import importlib
import typing
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf


# ---------------------------------------------------------------- torch.nn.common_types
def test_common_types_are_torchs_aliases():
    import torch.nn.common_types as t

    from shardflow.nn import common_types as s

    names = [n for n in vars(t) if n.startswith("_") and n.endswith("_t")] + ["T"]
    assert len(names) > 20
    for n in names:
        theirs = str(getattr(t, n)).replace("torch.Tensor", "Tensor")
        mine = str(getattr(s, n)).replace("shardflow.Tensor", "Tensor")
        assert mine == theirs, n
    assert typing.get_args(s._size_2_t) == (int, tuple[int, int])
    assert sf.nn.common_types is s  # an attribute of nn, as torch's


def test_a_layer_annotated_with_common_types_runs():
    from shardflow.nn.common_types import _size_2_t

    class Block(sf.nn.Module):
        def __init__(self, kernel_size: _size_2_t = 3):
            super().__init__()
            self.conv = sf.nn.Conv2d(2, 2, kernel_size)

        def forward(self, x):
            return self.conv(x)

    assert tuple(Block((3, 1))(sf.ones(1, 2, 5, 5)).shape) == (1, 2, 3, 5)


# ---------------------------------------------------------------- torch.nn.grad
CONV_CASES = [
    (1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    (2, (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)),
    (3, (1, 2, 5, 4, 4), (3, 2, 2, 3, 2), dict(padding=(1, 0, 1))),
]


@pytest.mark.parametrize("nd, xs, ws, kw", CONV_CASES)
def test_conv_input_and_weight_gradients_match_torch(nd, xs, ws, kw):
    rng = np.random.default_rng(nd)
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    out = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kw)
    go = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    t_in = getattr(torch.nn.grad, f"conv{nd}d_input")(xs, torch.tensor(w), torch.tensor(go), **kw)
    s_in = getattr(sf.nn.grad, f"conv{nd}d_input")(xs, sf.tensor(w), sf.tensor(go), **kw)
    np.testing.assert_allclose(s_in.numpy(), t_in.numpy(), rtol=1e-5, atol=1e-5)
    t_w = getattr(torch.nn.grad, f"conv{nd}d_weight")(torch.tensor(x), ws, torch.tensor(go), **kw)
    s_w = getattr(sf.nn.grad, f"conv{nd}d_weight")(sf.tensor(x), sf.Size(ws), sf.tensor(go), **kw)
    np.testing.assert_allclose(s_w.numpy(), t_w.numpy(), rtol=1e-5, atol=1e-5)
    assert not s_in.requires_grad and not s_w.requires_grad


def test_conv_input_gradient_is_differentiable_in_the_weight_as_torchs():
    rng = np.random.default_rng(0)
    w, go, r = (rng.standard_normal(s).astype(np.float32) for s in [(3, 2, 3, 3), (1, 3, 3, 3), (1, 2, 5, 5)])
    grads = []
    for lib in (torch, sf):
        wt = lib.tensor(w, requires_grad=True)
        gi = lib.nn.grad.conv2d_input((1, 2, 5, 5), wt, lib.tensor(go))
        (gi * lib.tensor(r)).sum().backward()
        grads.append(wt.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-5)


def test_conv_gradient_with_a_wrong_size_says_so():
    with pytest.raises(RuntimeError, match=r"grad_output has shape \(1, 3, 3, 3\) but the convolution.*gives"):
        sf.nn.grad.conv2d_input((1, 2, 6, 6), sf.ones(3, 2, 3, 3), sf.ones(1, 3, 3, 3))
    with pytest.raises(TypeError, match="input_size must be a shape"):
        sf.nn.grad.conv2d_input(sf.ones(1, 2, 5, 5), sf.ones(3, 2, 3, 3), sf.ones(1, 3, 3, 3))


# ---------------------------------------------------------------- torch.backends.*
def test_mkldnn_switches_have_torchs_defaults_and_flags():
    t, s = torch.backends.mkldnn, sf.backends.mkldnn
    for name in ("enabled", "deterministic", "allow_tf32", "fp32_precision", "VERBOSE_OFF", "VERBOSE_ON",
                 "VERBOSE_ON_CREATION"):
        assert getattr(s, name) == getattr(t, name), name
    assert s.is_available() is False and s.is_acl_available() is False  # shardflow calls no oneDNN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "TF32 on oneDNN needs an Intel GPU"
        for lib in (t, s):
            with lib.flags():  # torch's flags() default: oneDNN off inside
                assert lib.enabled is False
            assert lib.enabled is True
            with lib.flags(enabled=True, deterministic=True, fp32_precision="bf16"):
                assert (lib.enabled, lib.deterministic, lib.fp32_precision) == (True, True, "bf16")
            assert (lib.deterministic, lib.fp32_precision) == (False, "none")
            assert lib.set_flags(False) == (True, False, None, "none")
            assert lib.set_flags(True)[0] is False
            with pytest.raises(RuntimeError, match="Unknown precision: highest"):
                lib.set_flags(_fp32_precision="highest")
    s.enabled = False  # what scripts write; nothing else changes
    assert sf.nn.Linear(2, 2)(sf.ones(1, 2)).shape == (1, 2)
    s.enabled = True


def test_mkl_openmp_and_cpu_capability():
    assert sf.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    assert sf.backends.mkl.is_available() is False and sf.backends.openmp.is_available() is False
    with sf.backends.mkl.verbose(sf.backends.mkl.VERBOSE_OFF), sf.backends.mkldnn.verbose(0):
        pass
    for mod in (sf.backends.mkl, sf.backends.mkldnn):
        with pytest.raises(RuntimeError, match="no .* verbose log"), mod.verbose(1):
            pass
    assert {"mkldnn", "mkl", "openmp", "cpu"} <= set(dir(sf.backends))


# ---------------------------------------------------------------- torch.distributed.distributed_c10d
def test_distributed_c10d_public_names_are_distributeds():
    import torch.distributed.distributed_c10d as t

    from shardflow.distributed import distributed_c10d as s

    missing = [n for n in t.__all__ if not hasattr(s, n)]
    assert set(missing) == {"GroupName", "shrink_group", "record_comm", "ProcessGroupGloo"}  # docstring
    for n in ("ReduceOp", "ProcessGroup", "get_rank", "new_group", "Backend", "PrefixStore", "GroupMember"):
        assert getattr(s, n) is getattr(sf.distributed, n)
    assert sf.distributed.distributed_c10d is s


def test_distributed_c10d_private_helpers_before_and_after_init():
    from shardflow.distributed import distributed_c10d as s

    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        torch.distributed.distributed_c10d._get_default_group()
    with pytest.raises(ValueError, match="Default process group has not been initialized.*init_process_group"):
        s._get_default_group()
    assert s._world.default_pg is None
    for lib in (torch.distributed.distributed_c10d, s):
        assert lib._rank_not_in_group(None) is False
        assert lib._rank_not_in_group(lib.GroupMember.NON_GROUP_MEMBER) is True
    sf.distributed.init_process_group("gloo")
    try:
        pg = s._get_default_group()
        assert s._world.default_pg is pg and s._get_group_size(None) == 1 == s._get_group_size(pg)
        assert s._rank_not_in_group(pg) is False
        with pytest.warns(FutureWarning, match="use `torch.distributed.distributed_c10d.get_global_rank`"):
            assert s._get_global_rank(pg, 0) == 0
        with pytest.warns(UserWarning, match="_get_pg_default_device` will be deprecated"):
            assert s._get_pg_default_device() == sf.device("cpu")
    finally:
        sf.distributed.destroy_process_group()
    with pytest.raises(AttributeError, match="no registry of process groups.*get_process_group_ranks"):
        s._world.pg_map


# ---------------------------------------------------------------- torch.utils.cpp_extension
def test_cpp_extension_is_importable_with_torchs_names():
    import torch.utils.cpp_extension as t

    from shardflow.utils import cpp_extension as s

    assert [n for n in t.__all__ if not hasattr(s, n)] == []
    assert s.CUDA_HOME is None is t.CUDA_HOME and s.ROCM_HOME is None is t.ROCM_HOME
    assert s.is_ninja_available() == t.is_ninja_available()
    assert s.get_cxx_compiler() == t.get_cxx_compiler()
    assert s.remove_extension_h_precompiler_headers() is None


@pytest.mark.parametrize("call", [
    lambda ce: ce.load("ext", ["ext.cpp"]),
    lambda ce: ce.load_inline("ext", "int f() { return 1; }", functions=["f"]),
    lambda ce: ce.CppExtension("ext", ["ext.cpp"]),
    lambda ce: ce.CUDAExtension("ext", ["ext.cu"]),
    lambda ce: ce.BuildExtension(),
    lambda ce: ce.BuildExtension.with_options(use_ninja=False),
    lambda ce: ce.include_paths(),
    lambda ce: ce.library_paths("cuda"),
])
def test_building_an_extension_says_what_to_use_instead(call):
    from shardflow.utils import cpp_extension

    with pytest.raises(NotImplementedError, match=r"no C\+\+ extension ABI.*custom_op.*cupy.RawKernel"):
        call(cpp_extension)


def test_optional_extension_pattern_falls_back():
    """The pattern programs use: try the extension, fall back to Python on failure."""
    try:
        from shardflow.utils.cpp_extension import load

        ext = load("fused", ["fused.cpp"], verbose=False)
        fused = ext.forward
    except (ImportError, NotImplementedError, RuntimeError, OSError):
        def fused(x):
            return sf.relu(x) * 2

    assert fused(sf.tensor([-1.0, 2.0])).tolist() == [0.0, 4.0]


# ---------------------------------------------------------------- torch.optim.adamw
def test_optim_adamw_path():
    from shardflow.optim.adamw import AdamW

    assert AdamW is sf.optim.AdamW
    assert importlib.import_module("torch.optim.adamw").AdamW is torch.optim.AdamW


# ---------------------------------------------------------------- amp, profiler and return-type paths
def test_amp_module_paths_are_the_amp_objects():
    from shardflow.cpu.amp.autocast_mode import autocast as cpu_autocast
    from shardflow.cpu.amp.grad_scaler import GradScaler as CpuScaler
    from shardflow.cuda.amp.autocast_mode import autocast, custom_bwd, custom_fwd
    from shardflow.cuda.amp.common import amp_definitely_not_available
    from shardflow.cuda.amp.grad_scaler import GradScaler

    assert (autocast, custom_fwd, custom_bwd, GradScaler) == (sf.cuda.amp.autocast, sf.cuda.amp.custom_fwd,
                                                              sf.cuda.amp.custom_bwd, sf.cuda.amp.GradScaler)
    assert cpu_autocast is sf.cpu.amp.autocast and CpuScaler is sf.cpu.amp.GradScaler
    assert amp_definitely_not_available() == torch.cuda.amp.common.amp_definitely_not_available()
    with pytest.warns(FutureWarning, match="deprecated"), autocast():
        pass


def test_profiler_module_paths():
    import torch.profiler.profiler as tp

    from shardflow.autograd.profiler_util import EventList, FunctionEvent, FunctionEventAvg
    from shardflow.profiler.profiler import (
        ExecutionTraceObserver,
        ProfilerAction,
        profile,
        schedule,
        supported_activities,
        tensorboard_trace_handler,
    )

    assert sorted(tp.__all__) == sorted(["supported_activities", "ProfilerAction", "schedule",
                                         "tensorboard_trace_handler", "profile", "ExecutionTraceObserver"])
    assert profile is sf.profiler.profile and ProfilerAction is sf.profiler.ProfilerAction
    assert (schedule, supported_activities, tensorboard_trace_handler, ExecutionTraceObserver) == (
        sf.profiler.schedule, sf.profiler.supported_activities, sf.profiler.tensorboard_trace_handler,
        sf.profiler.ExecutionTraceObserver)
    assert (EventList, FunctionEvent, FunctionEventAvg) == (sf.profiler.EventList, sf.profiler.FunctionEvent,
                                                            sf.profiler.FunctionEventAvg)
    with profile() as prof:
        sf.ones(3).sum()
    assert isinstance(prof.events(), EventList)


def test_return_types_is_a_module_and_results_pickle():
    import pickle

    from shardflow.return_types import max as max_type
    from shardflow.return_types import topk

    r = sf.max(sf.tensor([[1.0, 3.0], [2.0, 0.0]]), 1)
    assert type(r) is max_type and sf.return_types.max is max_type
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is max_type and back.values.tolist() == [3.0, 2.0] and back.indices.tolist() == [1, 0]
    t = pickle.loads(pickle.dumps(torch.max(torch.tensor([[1.0, 3.0], [2.0, 0.0]]), 1)))
    assert t.indices.tolist() == back.indices.tolist()
    assert isinstance(sf.topk(sf.arange(5.0), 2), topk)
    torch_names = {n for n in dir(torch.return_types) if not n.startswith("_") and not n.endswith("_out")}
    missing = torch_names - set(dir(sf.return_types))
    # only torch's module helpers
    assert missing == {"SequenceKey", "all_return_types", "inspect", "name", "pytree_register_structseq",
                       "register_pytree_node", "return_types", "torch"}


def test_linalg_ex_and_slogdet_return_torchs_named_tuples():
    a = [[2.0, 1.0], [0.0, 3.0]]
    for fn, args, fields in [("slogdet", (), ("sign", "logabsdet")), ("inv_ex", (), ("inverse", "info")),
                             ("solve_ex", ([1.0, 2.0],), ("result", "info"))]:
        t = getattr(torch.linalg, fn)(torch.tensor(a), *(torch.tensor(x) for x in args))
        s = getattr(sf.linalg, fn)(sf.tensor(a), *(sf.tensor(x) for x in args))
        assert type(s).__name__ == type(t).__name__ == f"linalg_{fn}"
        for f in fields:
            np.testing.assert_allclose(getattr(s, f).numpy(), getattr(t, f).numpy(), rtol=1e-6)


# ---------------------------------------------------------------- torch.utils.module_tracker
def _tracked_log(lib, tracker_cls, input_grad):
    log, box = [], {}

    class Rec(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, tag):
            ctx.tag = tag
            log.append(("fw", tag, sorted(box["t"].parents), box["t"].is_bw))
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            log.append(("bw", ctx.tag, sorted(box["t"].parents), box["t"].is_bw))
            return g, None

    class Leaf(lib.nn.Module):
        def __init__(self, tag):
            super().__init__()
            self.tag, self.lin = tag, lib.nn.Linear(2, 2)

        def forward(self, x):
            return Rec.apply(self.lin(x), self.tag)

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = Leaf("a"), lib.nn.Sequential(Leaf("b0"), Leaf("b1"))

        def forward(self, x):
            return self.b(self.a(x))

    net = Net()
    with tracker_cls() as box["t"]:
        x = lib.ones(3, 2, requires_grad=input_grad)
        y = net(x)
        log.append(("after forward", sorted(box["t"].parents), box["t"].is_bw))
        y.sum().backward()
        log.append(("after backward", sorted(box["t"].parents), box["t"].is_bw))
    return log


@pytest.mark.parametrize("input_grad", [False, True])
def test_module_tracker_parents_forward_and_backward_match_torch(input_grad):
    from torch.utils.module_tracker import ModuleTracker as TorchTracker

    from shardflow.utils.module_tracker import ModuleTracker

    theirs = _tracked_log(torch, TorchTracker, input_grad)
    assert _tracked_log(sf, ModuleTracker, input_grad) == theirs
    assert ("bw", "b0", ["Global", "Net", "Net.b", "Net.b.0"], True) in theirs


def test_module_tracker_leaves_the_call_interceptor_as_it_found_it():
    from shardflow.nn import module as nn_module
    from shardflow.utils.module_tracker import ModuleTracker

    with ModuleTracker():
        assert nn_module._call_interceptor[0] is not None
    assert nn_module._call_interceptor[0] is None
    gm = sf.fx.symbolic_trace(sf.nn.Sequential(sf.nn.Linear(2, 2), sf.nn.ReLU()))  # tracing inside a tracker
    with ModuleTracker() as t:
        assert [n.op for n in sf.fx.symbolic_trace(sf.nn.Sequential(sf.nn.Linear(2, 2))).graph.nodes] == [
            "placeholder", "call_module", "output"]
        gm(sf.ones(1, 2))
        assert t.parents == {"Global"}


# ---------------------------------------------------------------- torch.export
def test_export_is_importable_and_refuses_with_the_alternatives():
    import torch.export as t

    from shardflow import export as s

    assert [n for n in t.__all__ if not hasattr(s, n)] == []
    model = sf.nn.Linear(2, 2)
    for call in (lambda: s.export(model, (sf.ones(1, 2),)), lambda: s.draft_export(model, (sf.ones(1, 2),)),
                 lambda: s.Dim("batch", min=1), lambda: s.load("model.pt2"), lambda: s.ExportedProgram()):
        with pytest.raises(NotImplementedError, match=r"no export .*fx.symbolic_trace.*compile"):
            call()
    assert not isinstance(model, s.ExportedProgram)


# ---------------------------------------------------------------- torch.distributed.optim paths
def _steps_in_backward(lib, apply, get):
    rng = np.random.default_rng(0)
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    ps = list(m.parameters())
    apply(lib.optim.SGD, ps[:2], {"lr": 0.1})
    apply(lib.optim.Adam, ps[2:], {"lr": 0.01})
    x = lib.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    for _ in range(3):
        m(x).pow(2).sum().backward()
    assert all(p.grad is None for p in ps) and len(get(m)) == 4
    assert [type(o).__name__ for o in get(m)] == ["SGD", "SGD", "Adam", "Adam"]
    return m, np.concatenate([p.detach().numpy().ravel() for p in ps])


def test_apply_optimizer_in_backward_steps_as_torchs():
    import torch.distributed.optim as t

    from shardflow.distributed.optim import (
        _apply_optimizer_in_backward,
        _get_in_backward_optimizers,
    )

    _, theirs = _steps_in_backward(torch, t._apply_optimizer_in_backward, t._get_in_backward_optimizers)
    model, mine = _steps_in_backward(sf, _apply_optimizer_in_backward, _get_in_backward_optimizers)
    np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    sf.distributed.init_process_group("gloo")
    try:
        with pytest.raises(NotImplementedError, match="optimizers applied in backward.*step a regular optimizer"):
            sf.nn.parallel.DistributedDataParallel(model)
    finally:
        sf.distributed.destroy_process_group()


def test_distributed_optim_module_paths():
    from shardflow.distributed.optim.apply_optimizer_in_backward import _apply_optimizer_in_backward
    from shardflow.distributed.optim.optimizer import DistributedOptimizer
    from shardflow.distributed.optim.zero_redundancy_optimizer import ZeroRedundancyOptimizer

    assert ZeroRedundancyOptimizer is sf.distributed.optim.ZeroRedundancyOptimizer
    assert DistributedOptimizer is sf.distributed.optim.DistributedOptimizer
    assert _apply_optimizer_in_backward is sf.distributed.optim._apply_optimizer_in_backward


# ---------------------------------------------------------------- torch.backends.quantized
def test_quantized_engine_is_torchs_switch_and_reaches_the_int8_layers():
    from shardflow.quant import engine as quant_engine

    t, s = torch.backends.quantized, sf.backends.quantized
    assert s.engine == t.engine == "x86" and s.supported_engines == t.supported_engines
    try:
        for name in ("qnnpack", "fbgemm", "onednn", "x86"):
            t.engine = s.engine = name
            assert s.engine == t.engine == quant_engine.get_engine() == name
            assert quant_engine.activation_reduce_range() is (name != "qnnpack")
        for bad, match in (("bogus", "bogus is not a valid value for quantized engine"),
                           ("none", "quantized engine NoQEngine is not supported")):
            for lib in (t, s):
                with pytest.raises(RuntimeError, match=match):
                    lib.engine = bad
        for lib in (t, s):
            with pytest.raises(RuntimeError, match="Assignment not supported"):
                lib.supported_engines = ["x86"]
        quant_engine.set_engine("qnnpack")  # shardflow's own setter is the same setting
        assert s.engine == "qnnpack"
    finally:
        t.engine = "x86"
        quant_engine.set_engine("x86")


# ---------------------------------------------------------------- torch.mps
def test_mps_answers_as_torch_without_mps():
    import torch.mps as t

    s = sf.mps
    assert [n for n in t.__all__ if n != "profiler" and not hasattr(s, n)] == []
    assert s.is_available() is t.is_available() is False and s.device_count() == t.device_count() == 0
    assert s.manual_seed(0) is None is t.manual_seed(0)
    for name, args in [("synchronize", ()), ("empty_cache", ()), ("seed", ()), ("get_rng_state", ()),
                       ("current_allocated_memory", ()), ("driver_allocated_memory", ()),
                       ("recommended_max_memory", ()), ("set_per_process_memory_fraction", (0.5,))]:
        with pytest.raises(RuntimeError, match="Cannot execute .* without MPS backend") as theirs:
            getattr(t, name)(*args)
        with pytest.raises(RuntimeError, match="Cannot execute .* without MPS backend.*device='cpu'") as mine:
            getattr(s, name)(*args)
        assert str(mine.value).startswith(str(theirs.value)), name
    with pytest.raises(RuntimeError, match="without MPS backend"):
        s.Event()


def test_distributed_constants():
    import torch.distributed.constants as t

    from shardflow.distributed import constants as s

    assert s.default_pg_timeout == t.default_pg_timeout and s.default_pg_timeout is sf.distributed.default_pg_timeout
    assert s.default_pg_nccl_timeout is None is t.default_pg_nccl_timeout  # torch's CPU build


# ---------------------------------------------------------------- torch.nn.parallel files
def test_nn_parallel_file_paths_keep_the_functions_as_package_attributes():
    import importlib

    import torch.nn.parallel as tp

    from shardflow.nn.parallel import primitives
    from shardflow.nn.parallel.parallel_apply import parallel_apply
    from shardflow.nn.parallel.replicate import replicate
    from shardflow.nn.parallel.scatter_gather import gather, scatter, scatter_kwargs

    assert (parallel_apply, replicate, gather, scatter, scatter_kwargs) == (
        primitives.parallel_apply, primitives.replicate, primitives.gather, primitives.scatter,
        primitives.scatter_kwargs)
    for name in ("parallel_apply", "replicate"):  # the function, not the file, as in torch
        importlib.import_module(f"shardflow.nn.parallel.{name}")
        assert callable(getattr(sf.nn.parallel, name)) and callable(getattr(tp, name))
    inputs, kwargs = scatter_kwargs((sf.arange(4.0).reshape(4, 1),), {"scale": 2.0}, [0, 1])
    assert [tuple(x[0].shape) for x in inputs] == [(2, 1), (2, 1)] and kwargs == ({"scale": 2.0}, {"scale": 2.0})
    assert gather([sf.ones(1, 2), sf.zeros(1, 2)], -1).tolist() == [[1.0, 1.0], [0.0, 0.0]]


def test_opt_einsum_switches_as_torchs():
    t, s = torch.backends.opt_einsum, sf.backends.opt_einsum
    assert s.is_available() == t.is_available() and s.get_opt_einsum() is t.get_opt_einsum()
    assert (s.enabled, s.strategy) == (t.enabled, t.strategy)
    for lib in (t, s):
        if not lib.is_available():  # (a test environment without the opt_einsum package)
            with pytest.raises(ValueError, match="opt_einsum is not available, so setting `strategy` to greedy"):
                with lib.flags(strategy="greedy"):
                    pass
            assert lib.strategy is None
            continue
        with lib.flags(strategy="greedy"):
            assert lib.strategy == "greedy"
        assert lib.strategy == "auto"
        with pytest.raises(ValueError, match=r"`strategy` must be one of the following: \[auto, greedy, optimal\]"):
            lib.set_flags(_strategy="bogus")
        with pytest.raises(ValueError, match="opt_einsum is not enabled"):
            with lib.flags(enabled=False, strategy="greedy"):
                pass
        lib.set_flags(True, "auto")
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with s.flags(enabled=False):  # changes nothing in shardflow's einsum
        assert sf.einsum("ij,jk->ik", sf.tensor(a), sf.tensor(b)).tolist() == (a @ b).tolist()


# ---------------------------------------------------------------- torch.utils.collect_env
def test_collect_env_report_has_torchs_layout():
    import torch.utils.collect_env as t

    from shardflow.utils import collect_env as s

    assert s.SystemEnv._fields == t.SystemEnv._fields
    info = s.get_env_info()
    assert info.torch_version == sf.__version__ and info.is_cuda_available is sf.cuda.is_available()
    assert info.python_platform == t.get_python_platform() and info.libc_version == t.get_libc_version()
    text = s.pretty_str(info)

    def labels(report):  # the "Label: value" lines before the CPU section
        return [line.split(":")[0] for line in report.split("\nCPU:\n")[0].splitlines() if ": " in line]

    theirs = t.env_info_fmt.format(**{f: "x" for f in t.SystemEnv._fields})
    assert labels(text) == labels(theirs) and len(labels(text)) == 22
    assert text.split("\nCPU:\n")[1].split("\n\nVersions of relevant libraries:\n")[0] == info.cpu_info
    assert text.startswith(f"PyTorch version: {sf.__version__}\nIs debug build: False\n")
    if not sf.cuda.is_available():
        assert "cuDNN version: No CUDA" in text and "Is CUDA available: False" in text
    assert any(line.startswith("[pip3] numpy==") for line in text.splitlines())
    assert s.pretty_str(info._replace(pip_packages="")).count("[pip3] No relevant packages") == 1


# ---------------------------------------------------------------- torch.cuda.profiler
@pytest.mark.skipif(sf.cuda.is_available(), reason="checks the answers without CUDA")
def test_cuda_profiler_without_cuda_raises_as_torch():
    import torch.cuda.profiler as t

    from shardflow.cuda import profiler as s

    assert t.__all__ == s.__all__ == ["start", "stop", "profile"] and sf.cuda.profiler is s
    for fn in ("start", "stop"):
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            getattr(t, fn)()
        with pytest.raises(AssertionError, match=rf"profiler.{fn}\(\) needs a CUDA device.*device='cpu'"):
            getattr(s, fn)()
    with pytest.raises(AssertionError, match="needs a CUDA device"), s.profile():
        pass


# ---------------------------------------------------------------- torch.utils.weak
@pytest.mark.parametrize("lib_name", ["torch", "shardflow"])
def test_weak_tensor_key_dictionary_as_torchs(lib_name):
    import gc

    lib = torch if lib_name == "torch" else sf
    weak = importlib.import_module(f"{lib_name}.utils.weak")
    assert weak.WeakTensorKeyDictionary is weak.WeakIdKeyDictionary
    a, b = lib.ones(3), lib.ones(3)  # equal values, different tensors
    d = weak.WeakTensorKeyDictionary()
    d[a], d[b] = "a", "b"
    assert d[a] == "a" and d[b] == "b" and len(d) == 2 and a in d and lib.ones(3) not in d
    assert sorted(d.values()) == ["a", "b"] and all(k is a or k is b for k in d)
    for key in d:  # a key collected while iterating: removed after the loop
        del b
        gc.collect()
        break
    assert len(d) == 1 and list(d.values()) == ["a"] and len(d.keyrefs()) == 1
    r = weak.WeakIdRef(a)
    assert r() is a and r == weak.WeakIdRef(a) and hash(r) == id(a)
    t = weak.TensorWeakRef(a)
    assert t() is a
    del a, key
    gc.collect()
    assert len(d) == 0 and t() is None and r() is None and r != weak.WeakIdRef(lib.ones(1))
    with pytest.raises(AssertionError, match="expected torch.Tensor"):
        weak.TensorWeakRef([1])
    c = lib.zeros(1)
    d2 = weak.WeakIdKeyDictionary({c: 1})
    assert d2.copy()[c] == 1 and d2.pop(c) == 1 and len(d2) == 0


# ---------------------------------------------------------------- torch.utils.deterministic
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "complex64", "int8", "int32", "int64", "uint8",
                                   "bool"])
def test_deterministic_mode_fills_uninitialized_memory_as_torch(dtype):
    import torch.utils.deterministic  # noqa: F401 - torch's attribute needs the import

    from shardflow.utils import deterministic

    def made(lib):
        d = getattr(lib, dtype)
        x = lib.ones(2, dtype=d)
        x.resize_(5)
        out = [lib.empty(3, dtype=d), lib.empty_like(lib.ones(2, dtype=d)), lib.ones(1, dtype=d).new_empty(2),
               lib.empty_strided((2,), (1,), dtype=d), x[2:]]
        return [np.asarray(t.float().tolist() if dtype in ("bfloat16",) else t.tolist(), dtype=object) for t in out]

    def same(a, b):
        return all(str(x) == str(y) for x, y in zip(np.ravel(a), np.ravel(b), strict=True))

    for lib in (torch, sf):
        lib.use_deterministic_algorithms(True)
    try:
        theirs, mine = made(torch), made(sf)
        assert all(same(m, t) for m, t in zip(mine, theirs, strict=True)), (mine, theirs)
        assert deterministic.fill_uninitialized_memory is True
        deterministic.fill_uninitialized_memory = False
        torch.utils.deterministic.fill_uninitialized_memory = False
        assert sf.zeros(1).resize_(3)[0].item() == 0 and deterministic.fill_uninitialized_memory is False
        with pytest.raises(RuntimeError, match="expected a bool, but got int"):
            deterministic.fill_uninitialized_memory = 1
    finally:
        deterministic.fill_uninitialized_memory = True
        torch.utils.deterministic.fill_uninitialized_memory = True
        for lib in (torch, sf):
            lib.use_deterministic_algorithms(False)


# ---------------------------------------------------------------- torch.signal / torch.masked files
def test_signal_windows_and_maskedtensor_files():
    import torch.masked.maskedtensor.core as tcore
    import torch.signal.windows.windows as tw

    from shardflow.masked.maskedtensor import core, creation
    from shardflow.signal.windows import windows

    assert tw.__all__ == windows.__all__ and all(getattr(windows, n) is getattr(sf.signal.windows, n)
                                                 for n in windows.__all__)
    np.testing.assert_allclose(windows.hann(5).numpy(), tw.hann(5).numpy(), atol=1e-7)
    assert core.MaskedTensor is sf.masked.MaskedTensor and core.is_masked_tensor is sf.masked.is_masked_tensor
    assert set(tcore.__all__) <= set(dir(core))
    assert creation.masked_tensor is sf.masked.masked_tensor and creation.as_masked_tensor is sf.masked.as_masked_tensor
    mt = creation.masked_tensor(sf.tensor([1.0, 2.0]), sf.tensor([True, False]))
    assert core.is_masked_tensor(mt) and mt.sum().get_data().item() == 1.0


# ---------------------------------------------------------------- torch.cuda.nccl
def test_cuda_nccl_module():
    import torch.cuda.nccl as t

    s = sf.cuda.nccl
    assert s.__all__ == t.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert s.is_available([sf.ones(1)]) is False is t.is_available([torch.ones(1)])  # CPU tensors
    if s._nccl() is None:
        with pytest.raises(RuntimeError, match="no NCCL library here.*cupy"):
            s.version()
    else:
        assert len(s.version()) == 3
    for name in t.__all__:
        with pytest.raises(NotImplementedError, match="single-process multi-GPU NCCL collectives.*torch.distributed"):
            getattr(s, name)([sf.ones(1)], [sf.ones(1)])


# ---------------------------------------------------------------- torch.utils.mobile_optimizer
def test_mobile_optimizer_importable_and_refuses():
    import torch.utils.mobile_optimizer as t

    from shardflow.utils import mobile_optimizer as s

    assert {k: int(v.value) for k, v in s.MobileOptimizerType.__members__.items()} == {
        k: int(v) for k, v in t.MobileOptimizerType.__members__.items()}
    assert {k: v.value for k, v in s.LintCode.__members__.items()} == {k: v.value for k, v in t.LintCode.__members__.items()}
    model = sf.jit.script(sf.nn.Linear(2, 2))
    for call in (lambda: s.optimize_for_mobile(model), lambda: s.generate_mobile_module_lints(model)):
        with pytest.raises(NotImplementedError, match="no TorchScript.*shardflow.save.*optimize_for_mobile there"):
            call()


def test_small_backend_switches_answer_as_torch_cpu_build():
    import torch.backends.xnnpack  # noqa: F401 - not an attribute of torch.backends until imported

    t, s = torch.backends, sf.backends
    assert s.nnpack.is_available() is False  # torch's CPU build has NNPACK; shardflow calls none
    for lib in (t.nnpack, s.nnpack):
        with lib.flags():
            assert lib.set_flags(False) == (False,)
        assert lib.set_flags(True) == (True,)
    assert s.xnnpack.enabled is False is t.xnnpack.enabled
    assert s.mha.get_fastpath_enabled() is True is t.mha.get_fastpath_enabled()
    for lib in (t.mha, s.mha):
        lib.set_fastpath_enabled(False)
        assert lib.get_fastpath_enabled() is False
        lib.set_fastpath_enabled(True)
    assert s.cusparselt.is_available() is False is t.cusparselt.is_available()
    assert s.cusparselt.version() is None is t.cusparselt.version()
    assert s.kleidiai.is_available() is False is t.kleidiai.is_available()
    assert s.miopen.immediate is False is t.miopen.immediate


# ---------------------------------------------------------------- small torch.utils files
def test_file_baton_locks_between_holders(tmp_path):
    from torch.utils.file_baton import FileBaton as TorchBaton

    from shardflow.utils.file_baton import FileBaton

    for cls in (TorchBaton, FileBaton):
        path = str(tmp_path / f"{cls.__module__}.lock")
        first, second = cls(path, wait_seconds=0.01), cls(path, wait_seconds=0.01, warn_after_seconds=0.0)
        assert first.try_acquire() is True and second.try_acquire() is False
        first.release()
        second.wait()  # returns at once: released
        assert second.try_acquire() is True
        second.release()


def test_backcompat_and_worker_init_fn_as_torch():
    import torch.utils.backcompat as tb
    import torch.utils.data.backward_compatibility as tbc

    from shardflow.utils import backcompat as sb
    from shardflow.utils.data import backward_compatibility as sbc

    assert sb.broadcast_warning.enabled is False is tb.broadcast_warning.enabled
    assert sb.keepdim_warning.enabled is False is tb.keepdim_warning.enabled
    for mod in (tbc, sbc):
        with pytest.warns(FutureWarning, match="backward_compatibility.worker_init_fn` is deprecated"):
            assert mod.worker_init_fn(0) is None


def test_conv_gradients_inside_a_custom_function_backward_as_torch():
    """The use nn.grad exists for: a custom conv Function's backward (run without grad mode)."""
    rng = np.random.default_rng(3)
    xv, wv = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    grads = []
    for lib in (torch, sf):
        class Conv(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                return lib.nn.functional.conv2d(x, w)

            @staticmethod
            def backward(ctx, g):
                x, w = ctx.saved_tensors
                return (lib.nn.grad.conv2d_input(x.shape, w, g), lib.nn.grad.conv2d_weight(x, w.shape, g))

        x, w = lib.tensor(xv, requires_grad=True), lib.tensor(wv, requires_grad=True)
        Conv.apply(x, w).pow(2).sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
        with lib.no_grad():
            assert tuple(lib.nn.grad.conv2d_input((1, 2, 5, 5), w, lib.ones(1, 3, 3, 3)).shape) == (1, 2, 5, 5)
    for mine, theirs in zip(grads[1], grads[0], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)


def test_factory_kwargs_as_torch():
    for lib in (torch, sf):
        assert lib.nn.factory_kwargs(None) == {}
        assert lib.nn.factory_kwargs({"dtype": lib.float64}) == {"dtype": lib.float64}
        assert lib.nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": lib.float16}}) == {
            "dtype": lib.float16, "device": "cpu"}
        with pytest.raises(TypeError, match="unexpected kwargs"):
            lib.nn.factory_kwargs({"bogus": 1})
        with pytest.raises(TypeError, match="dtype specified twice, in \\*\\*kwargs and in factory_kwargs"):
            lib.nn.factory_kwargs({"dtype": lib.float32, "factory_kwargs": {"dtype": lib.float16}})
    assert sf.empty(2, **sf.nn.factory_kwargs({"dtype": sf.float64})).dtype == sf.float64


# ---------------------------------------------------------------- torch.utils.throughput_benchmark
def test_throughput_benchmark_as_torchs(tmp_path):
    import json

    import torch.utils.throughput_benchmark as t

    from shardflow.utils import throughput_benchmark as s

    for kw in ({"time_us": 12.5}, {"time_ms": 3.25}, {"time_s": 2.0}, {"time_us": 2500.0}):
        assert s.format_time(**kw) == t.format_time(**kw)
    for mod in (t, s):
        with pytest.raises(AssertionError, match="Expected only one of time_us, time_ms, time_s is given"):
            mod.format_time(time_us=1, time_ms=1)
    model = sf.nn.Sequential(sf.nn.Linear(4, 8), sf.nn.ReLU(), sf.nn.Linear(8, 2))
    bench = s.ThroughputBenchmark(model)
    x = sf.randn(3, 4)
    bench.add_input(x)
    bench.add_input(sf.randn(5, 4))
    assert bench.run_once(x).tolist() == model(x).tolist() and not bench.run_once(x).requires_grad
    trace = tmp_path / "trace.json"
    stats = bench.benchmark(num_calling_threads=2, num_warmup_iters=2, num_iters=20, profiler_output_path=str(trace))
    assert stats.num_iters == 20 and stats.latency_avg_ms > 0
    assert stats.iters_per_second == pytest.approx(stats.num_iters / stats.total_time_seconds)
    assert stats.total_time_seconds == pytest.approx(20 * stats.latency_avg_ms / 1000 / 2)
    lines = str(stats).splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["Average latency per example", "Total number of iterations",
                                                   "Total number of iterations per second (across all threads)",
                                                   "Total time"]
    assert "traceEvents" in json.loads(trace.read_text())
    with pytest.raises(RuntimeError, match="no inputs: call add_input"):
        s.ThroughputBenchmark(model).benchmark()
    broken = s.ThroughputBenchmark(lambda v: v.reshape(7))
    broken.add_input(sf.ones(3))
    with pytest.raises(RuntimeError, match="shape"):
        broken.benchmark(num_calling_threads=2, num_warmup_iters=1, num_iters=2)


def test_autograd_profiler_legacy_path():
    import inspect

    import torch.autograd.profiler_legacy as t

    from shardflow.autograd.profiler_legacy import profile

    assert list(inspect.signature(profile).parameters) == list(inspect.signature(t.profile).parameters)
    with profile(record_shapes=True) as prof:
        sf.ones(2, 3).sum()
    assert isinstance(prof, sf.autograd.profiler.profile) and "sum" in prof.table()
    assert sf.autograd.profiler_legacy.profile is profile


# ---------------------------------------------------------------- torch.distributed.elastic.utils.data
def test_elastic_sampler_and_cycling_iterator_as_torch():
    from torch.distributed.elastic.utils.data import CyclingIterator as TorchCycling
    from torch.distributed.elastic.utils.data import ElasticDistributedSampler as TorchSampler

    from shardflow.distributed.elastic.utils.data import CyclingIterator, ElasticDistributedSampler

    data = list(range(11))
    for rank in range(3):
        for epoch in (0, 5):
            t, s = TorchSampler(data, num_replicas=3, rank=rank, start_index=4), \
                ElasticDistributedSampler(data, num_replicas=3, rank=rank, start_index=4)
            t.set_epoch(epoch)
            s.set_epoch(epoch)
            assert list(s) == list(t) and len(s) == len(t) == 3
    for cls in (TorchSampler, ElasticDistributedSampler):
        with pytest.raises(ValueError, match="Start index 11 should be less than dataset size 11"):
            cls(data, num_replicas=2, rank=0, start_index=11)
    gen = lambda epoch: iter([epoch * 10, epoch * 10 + 1])  # noqa: E731
    assert list(CyclingIterator(3, gen, start_epoch=1)) == list(TorchCycling(3, gen, start_epoch=1)) == [10, 11, 20, 21]
    assert list(CyclingIterator(2, lambda e: iter([]))) == list(TorchCycling(2, lambda e: iter([]))) == []
