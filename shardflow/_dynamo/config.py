"""``torch._dynamo.config``: Dynamo's settings, with PyTorch 2.13's names and defaults
(``compiler/config_module.py``).

``cache_size_limit`` and ``recompile_limit`` (one setting in PyTorch 2.13) are shardflow's:
how many input signatures ``shardflow.compile`` and ``compile_step`` trace per function before
running it eagerly (``jit/api.py``, ``jit/step.py``). ``suppress_errors`` describes what
shardflow's compiler always does: a function the tracer cannot record runs eagerly, with the
reason logged (``SHARDFLOW_DEBUG=compile``), whatever the setting. The rest tune Dynamo's
bytecode capture and are recorded only.
"""

from __future__ import annotations

from ..compiler.config_module import ConfigModule, install
from ..jit import api as _api
from ..jit import step as _step


def _get_limit():
    return _api.cache_size_limit


def _set_limit(value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"torch._dynamo.config.cache_size_limit must be a non-negative int, got {value!r}")
    _api.cache_size_limit = value
    _step.cache_size_limit = value


DEFAULTS = {
    "suppress_errors": False, "accumulated_cache_size_limit": 256, "accumulated_recompile_limit": 256,
    "optimize_ddp": True, "verbose": False, "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False, "automatic_dynamic_shapes": True,
    "assume_static_by_default": True, "inline_inbuilt_nn_modules": True, "compiled_autograd": False,
    "specialize_int": False, "force_parameter_static_shapes": True, "log_compilation_metrics": True,
    "error_on_recompile": False, "skip_nnmodule_hook_guards": True, "guard_nn_modules": True,
    "allow_unspec_int_on_nn_module": False, "dynamic_shapes": True, "replay_record_enabled": False,
    "repro_level": 2, "repro_after": None,
}

install(__name__, ConfigModule("torch._dynamo.config", DEFAULTS, linked={
    "cache_size_limit": (_get_limit, _set_limit),
    "recompile_limit": (_get_limit, _set_limit),
}))
