"""The public names torch 2.13's submodules have and shardflow's lack, pinned per submodule
(session 33's audit; ``torch``, ``torch.nn``, ``torch.nn.functional`` and ``torch.Tensor`` are
pinned by docs/COMPAT.md's gap list and ``tests/test_torch_namespace.py``). Building a name
fails the test until it is deleted from ``GAPS``; losing a name fails it too. Names that are
only torch's own imports from the standard library (``typing.Any``, ``functools.partial``,
modules such as ``math``) are not counted. docs/COMPAT.md, "Submodule names (session 33)",
says why each remaining group is not built."""

import importlib
import types
import warnings

import pytest
import torch

MODULES = ["nn.init", "nn.utils", "nn.utils.rnn", "nn.utils.parametrize", "nn.utils.parametrizations",
           "nn.utils.prune", "nn.utils.stateless", "nn.utils.fusion", "optim", "optim.lr_scheduler",
           "optim.swa_utils", "utils.data", "autograd", "autograd.functional", "autograd.forward_ad",
           "autograd.graph", "autograd.profiler", "func", "linalg", "special", "fft", "distributions",
           "distributions.constraints", "distributions.transforms", "distributions.kl", "amp", "testing",
           "utils.checkpoint", "nn.attention", "distributed", "backends", "backends.cuda", "backends.cudnn",
           "backends.mps", "backends.mkldnn", "backends.mkl", "backends.openmp", "backends.opt_einsum",
           "backends.cpu"]

# What remains, by module (a space-separated list; absent module: nothing missing).
GAPS = {
    "nn.utils.rnn": "PackedSequence_ bind copy_method_params",
    "nn.utils.parametrize": "OpaqueBase get_swap_module_params_on_conversion is_opaque_reference_type is_traceable_wrapper_subclass",
    "nn.utils.stateless": "NamedMemberAccessor Tensor",
    "nn.utils.fusion": "ConvT LinearT",
    "optim.lr_scheduler": "TYPE_CHECKING Tensor inf",
    "optim.swa_utils": "PARAM_LIST TYPE_CHECKING",
    "utils.data": "DFIterDataPipe DataChunk IterDataPipe MapDataPipe argument_validation datapipes functional_datapipe graph graph_settings guaranteed_datapipes_determinism non_deterministic runtime_validation runtime_validation_disabled",
    "autograd": "DeviceType NestedIOFunction ProfilerActivity ProfilerConfig ProfilerEvent ProfilerState SavedTensor enforce_grad_layout_policy handle_torch_function has_torch_function kineto_available",
    "autograd.functional": "fwAD",
    "autograd.graph": "RemovableHandle TYPE_CHECKING TorchDispatchMode Variable region_activation_memory_budget set_override_stale_capture_stream set_warn_on_accumulate_grad_stream_mismatch",
    "autograd.profiler": "DeviceType EnforceUnique Future KinetoStepTracker MEMORY_EVENT_NAME MemRecordsAcc OUT_OF_MEMORY_EVENT_NAME ProfilerActivity ProfilerConfig ProfilerState kineto_available load_nvprof parse_nvprof_trace warn",
    "func": "rearrange",
    "linalg": "common_notes",
    "special": "Tensor common_args multi_dim_common",
    "fft": "Tensor common_args factory_common_args",
    "distributions.transforms": "Distribution F Tensor pad",
    "distributions.kl": "Binomial Cauchy ContinuousBernoulli ExponentialFamily Geometric Gumbel HalfNormal LowRankMultivariateNormal Pareto Poisson Tensor inf",
    "utils.checkpoint": "GraphExecGroup LoggingTensorMode SAC_IGNORED_OPS SavedTensor TYPE_CHECKING TorchDispatchMode capture_logs fx_traceback tree_map",
    "nn.attention": "SDPAParams WARN_FOR_UNFUSED_KERNELS activate_flash_attention_impl can_use_efficient_attention can_use_flash_attention current_flash_attention_impl list_flash_attention_impls register_flash_attention_impl restore_flash_attention_impl warn",
    "distributed": "GroupName Logger ProcessGroupGloo RankType Reducer c10d_logger config logging_handlers record_comm remote_device shrink_group",
    "backends": "m python_native",
    "backends.cuda": "SDPAParams blas_workspace_size can_use_cudnn_attention can_use_efficient_attention can_use_flash_attention cuBLASModule cuFFTPlanCache cuFFTPlanCacheAttrContextProp cuFFTPlanCacheManager cublas_workspace_size cublaslt_workspace_size cufft_plan_cache is_ck_sdpa_available preferred_blas_library preferred_rocm_fa_library",
    "backends.cudnn": "m",
    "backends.mps": "TYPE_CHECKING",
    "backends.mkldnn": "m",
    "backends.opt_einsum": "m",
}

_STDLIB = {"typing", "typing_extensions", "collections", "collections.abc", "_collections_abc", "functools",
           "_functools", "weakref", "_weakref", "dataclasses", "copy", "enum", "warnings", "logging", "time",
           "builtins", "abc", "contextlib", "math", "operator"}


def _importable(path):
    try:
        importlib.import_module(path)
    except ImportError:
        return False
    return True


def _missing(name):
    """(names, submodules) torch.<name> has and shardflow.<name> lacks. A submodule is in
    ``dir()`` only once something imported it, which depends on test order: submodules are
    compared by importing them, and only the pinned ones are checked."""
    t = importlib.import_module("torch." + name)
    s = importlib.import_module("shardflow." + name)
    out, subs = set(), set()
    for n in dir(t):
        if n.startswith("_") or hasattr(s, n):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = getattr(t, n, None)
        if isinstance(v, types.ModuleType) and v.__name__ == f"torch.{name}.{n}":
            if not _importable(f"shardflow.{name}.{n}"):
                subs.add(n)
            continue
        if isinstance(v, types.ModuleType) and not v.__name__.startswith("torch."):
            continue  # an imported standard-library or third-party module (a torch one is an alias: F, fwAD)
        if (getattr(v, "__module__", None) or "") in _STDLIB:
            continue  # typing.Any, functools.partial ...: torch's own imports
        out.add(n)
    return out, subs


@pytest.mark.parametrize("name", MODULES)
def test_submodule_gaps_are_pinned(name):
    pinned = set(GAPS.get(name, "").split())
    missing, subs = _missing(name)
    pinned_subs = {n for n in pinned if _importable(f"torch.{name}.{n}")}
    for n in pinned_subs:
        assert not _importable(f"shardflow.{name}.{n}"), f"torch.{name}.{n}: built now, delete from GAPS"
    pinned -= pinned_subs
    assert not (pinned - missing), f"torch.{name}: built now, delete from GAPS: {sorted(pinned - missing)}"
    assert not (missing - pinned), f"torch.{name}: names shardflow lost (or torch gained): {sorted(missing - pinned)}"


def test_every_pinned_module_is_audited():
    assert set(GAPS) <= set(MODULES)
    assert torch.__version__.startswith("2.13")
