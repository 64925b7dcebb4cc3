"""Autograd (layer L2): Tensor, Function, the backward engine, grad modes and hooks.

See ``engine.py`` for the algorithm and ``function.py`` for how an op plugs in.
"""

from .._lazy import lazy_attributes
from . import anomaly_mode, dispatch, forward_ad, graph, variable
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .api import backward, grad
from .function import Function
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_multithreading_enabled,
    is_view_replay_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from .gradcheck import gradcheck, gradgradcheck
from .predicates import is_tensor_like
from .recompute import checkpoint
from .tensor import Size, Tensor, _wrap
from .variable import Variable

# Imported on first use (PEP 562): ``autograd.profiler`` / ``profiler_legacy`` / ``profiler_util``
# (torch's paths for the legacy profiler and its result types) sit over shardflow.profiler, a layer above;
# ``autograd.functional`` (jacobian, hessian, ...) few programs need.
__getattr__, __dir__ = lazy_attributes(__name__, globals(), submodules={"functional", "profiler", "profiler_legacy",
                                                                                "profiler_util"})
