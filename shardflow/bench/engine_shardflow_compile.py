"""The ``shardflow.compile_step`` column of ``shardflow bench engine``: shardflow's own train
step (forward, backward, optimizer update) compiled into one replay plan by ``shardflow.jit``.

The step is ``shardflow.jit.compile_step(model, optimizer, loss_fn)`` with the workload's loss
(``loss_fn(model, x, y)``), on a copy of the shardflow model (same initial weights as every
other column, trained independently). Its first call traces, runs eagerly and checks the plan
against eager, so the warm-up steps carry the compile cost the benchmark reports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NAME = "sf.compile_step"


def available() -> tuple[bool, str]:
    """(True, '') when ``shardflow.jit.compile_step`` exists, else (False, why)."""
    from shardflow import jit

    if not hasattr(jit, "compile_step"):
        return False, "this shardflow has no shardflow.jit.compile_step (compiled train step)"
    return True, ""


def make_step(sf, wl, sf_model, x, y) -> Callable[[], Any]:
    """A no-argument callable running one compiled train step of workload ``wl`` on a copy of
    ``sf_model`` (x, y: the batch as shardflow tensors); returns the loss."""
    from shardflow import jit

    model = _copy_model(sf, wl, sf_model)
    opt = wl.make_optimizer(sf, model)
    step = jit.compile_step(model, opt, lambda m, x, y: wl.loss(sf, m, x, y))
    return lambda: step(x, y)


def _copy_model(sf, wl, sf_model):
    """A new model of ``wl`` holding copies of ``sf_model``'s current weights."""
    model = wl.build(sf)
    model.load_state_dict({k: sf.tensor(v.detach().numpy().copy())
                           for k, v in sf_model.state_dict().items()})
    return model
