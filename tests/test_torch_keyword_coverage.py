"""Every keyword argument of torch 2.13's public callables (functions and class constructors
of ``torch.nn``, ``nn.functional``, ``optim``, ``lr_scheduler``, ``utils.data``, ``nn.utils``,
``nn.init``, ``distributed``, ``nn.parallel``, ``linalg``, ``fft``, ``special``, ``autograd``,
``func``, ``amp``) is accepted by shardflow's callable of the same name (or shardflow's takes
``**kwargs``): a public program passing one would otherwise stop with a TypeError. Private
(underscore) parameters are exempt. Session 37 added the last ones: ``DeviceMesh(device_type=,
mesh=, backend_override=)``, ``init_device_mesh(backend_override=)``, ``P2POp(group_peer=)``,
DDP's newest arguments, ``autograd.backward(grad_variables=)``, the pipeline schedules'
chunk specs, ``profiler.schedule(skip_first_wait=)``, ``fully_shard(dp_mesh_dims=)``,
``FileSystemWriter(serialization_format=)`` and a few parameter names."""

import importlib
import inspect
import warnings

import pytest
import torch

import shardflow as sf

MODULES = ["nn.functional", "nn", "optim", "optim.lr_scheduler", "utils.data", "nn.utils", "nn.init",
           "distributed", "nn.parallel", "linalg", "fft", "special", "autograd", "func", "amp",
           "utils.checkpoint", "nn.utils.rnn", "random", "profiler", "utils.hooks", "distributed.fsdp",
           "distributed.checkpoint", "distributed.pipelining", "distributed.tensor",
           "distributed.tensor.parallel", "distributed.rpc", "distributions", "optim.swa_utils",
           "autograd.graph", "nn.attention", "multiprocessing"]
EXEMPT = {"distributed.pipelining.Pipe"}  # built by pipeline() from a traced graph, not by users


def _resolve(root, path):
    return importlib.import_module(f"{root.__name__}.{path}")


def _keywords(f):
    try:
        ps = inspect.signature(f).parameters
    except (ValueError, TypeError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in ps.values()):
        return None  # takes anything
    return {n for n, p in ps.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@pytest.mark.parametrize("path", MODULES)
def test_torch_keywords_are_accepted(path):
    tm, sm = _resolve(torch, path), _resolve(sf, path)
    missing = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in dir(tm):
            if name.startswith("_"):
                continue
            a, b = getattr(tm, name, None), getattr(sm, name, None)
            if b is None or not callable(a) or f"{path}.{name}" in EXEMPT:
                continue
            ka = _keywords(a.__init__ if inspect.isclass(a) else a)
            kb = _keywords(b.__init__ if inspect.isclass(b) else b)
            if ka is None or kb is None:
                continue
            lack = sorted(k for k in ka - kb if not k.startswith("_") and k != "self")
            if lack:
                missing.append(f"{path}.{name}: {lack}")
    assert not missing, "torch keywords shardflow lacks:\n" + "\n".join(missing)


def test_backward_grad_variables_is_torchs_deprecated_alias():
    x = sf.ones(2, requires_grad=True)
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated"):
        sf.autograd.backward([x * 2], grad_variables=[sf.tensor([1.0, 3.0])])
    assert x.grad.tolist() == [2.0, 6.0]
    with pytest.raises(RuntimeError, match="both passed"), pytest.warns(FutureWarning):
        sf.autograd.backward([x * 2], grad_tensors=[sf.ones(2)], grad_variables=[sf.ones(2)])


def test_device_mesh_takes_torchs_keywords():
    m = sf.distributed.DeviceMesh(device_type="cpu", mesh=sf.tensor([0]), mesh_dim_names=("dp",))
    assert m.device_type == "cpu" and m.mesh.tolist() == [0] and m.mesh_dim_names == ("dp",)
    with pytest.raises(NotImplementedError, match="drop backend_override"):
        sf.distributed.init_device_mesh("cpu", (1,), backend_override={0: "gloo"})


def test_ddp_refuses_reduction_changing_arguments_before_any_state():
    with pytest.raises(NotImplementedError, match="mixed_precision.*autocast"):
        sf.nn.parallel.DistributedDataParallel(sf.nn.Linear(2, 2), mixed_precision=object())
    with pytest.raises(NotImplementedError, match="skip_all_reduce_unused_params"):
        sf.nn.parallel.DistributedDataParallel(sf.nn.Linear(2, 2), skip_all_reduce_unused_params=True)


def test_profiler_schedule_skip_first_wait_like_torch():
    kw = dict(wait=2, warmup=1, active=2, repeat=2, skip_first=1, skip_first_wait=1)
    ts, ss = torch.profiler.schedule(**kw), sf.profiler.schedule(**kw)
    assert [ts(i).name for i in range(12)] == [ss(i).name for i in range(12)]


def test_pipeline_schedules_refuse_custom_chunk_specs():
    from shardflow.distributed.pipelining import schedules

    with pytest.raises(NotImplementedError, match="args_chunk_spec"):
        schedules._refuse_chunk_specs((None,), None, None)
