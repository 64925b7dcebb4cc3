"""``shardflow.distributed.planner``: the parallel-layout planner (docs/PLANNER.md).

A cost model written from the model's own structure: one traced step on a tiny batch
(``trace.py``; ``scaling.py`` extrapolates it to any size), the FLOPs and bytes of each op
(``opcost.py``), every collective a layout implies with alpha-beta costs
(``collectives.py``), memory per rank, and the schedules' overlap and bubble (``cost.py``),
over a profile of the machine (``profile.py``: measured by ``calibrate.py`` /
``microbench.py``, or a data file for hardware we cannot measure). ``search.py`` enumerates
and ranks the valid layouts (``layout.py``); ``report.py`` prints them.

    from shardflow.distributed.planner import plan, spec_for_model, load_profile, model_shape
    spec = spec_for_model(model, batch_size=32, make_inputs=..., step_loss=...)
    res = plan(spec, world=4, profile=load_profile("profile.json"), shape=model_shape(model))
    print(report.table(res)); print(explain(res))
"""

from . import report
from .calibrate import calibrate
from .cost import Collective, Estimate, RunSpec, estimate
from .layout import Layout, ModelShape, enumerate_layouts, grad_sync_of, invalid_reason
from .profile import Group, Profile, builtin_profiles, load_profile
from .scaling import ModelTrace, trace_live, trace_model
from .search import PlanResult, explain, model_shape, plan, spec_for_model
from .trace import StepTrace, assign_tp_roles, trace_step

__all__ = ["Layout", "ModelShape", "enumerate_layouts", "invalid_reason", "grad_sync_of",
           "RunSpec", "Estimate", "Collective", "estimate", "Profile", "Group", "load_profile",
           "builtin_profiles", "calibrate", "ModelTrace", "trace_model", "trace_live",
           "StepTrace", "trace_step", "assign_tp_roles", "PlanResult", "plan", "explain",
           "spec_for_model", "model_shape", "report"]
