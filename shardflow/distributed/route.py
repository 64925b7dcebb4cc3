"""The global route: turning on (and off) how ops reach the sbp rules.

``autograd/dispatch`` (L2) has one hook slot that every registered op call passes; while it
is empty an op costs one check. :func:`enable` puts :func:`.rules.handle` there and adds the
Tensor methods of global tensors to the op table (``x.to_global``, ``x.to_local``,
``x.redistribute``, ``x.full_tensor``, what ``x.numpy()``, ``Module.to_global`` and ``nn.Parameter(global)`` call).
It is idempotent, and :func:`disable` undoes exactly that (tests use it so no state
outlives a test).

Who calls :func:`enable`: making a placement (``placement.__init__``). That is the first
point every global program passes, and it must be no later: a creation op can be the first
global call (``shardflow.randn(4, placement=p, sbp=sbp.split(0))``), and without the
handler the op would be called with ``placement=``. Enabling it earlier (at import) would
put the handler in front of every op of every program, global or not.

Import order, bottom up (no module imports one above it; ``lint-imports`` checks it):
``sbp``, ``plan`` -> ``layout`` -> ``spec`` -> ``boxing`` -> ``global_tensor`` ->
``rules`` -> ``route`` -> ``placement``.
"""

from __future__ import annotations

from ..autograd import dispatch as _dispatch
from . import global_tensor as _gt
from .full_state import lay_out_like
from .rules import handle
from .rules.fallback import forget_warnings

__all__ = ["enable", "disable", "is_enabled"]

# The op-table entries the route adds: Tensor methods of global tensors, found by
# ``Tensor.__getattr__`` / called by autograd and nn through ``dispatch.op``.
TENSOR_METHODS = {
    "to_global": _gt.to_global,
    "to_local": _gt.to_local,
    "redistribute": _gt.redistribute,
    "full_tensor": _gt.full_tensor,
    "_global_to_numpy": _gt.global_to_numpy,
    "_module_to_global": _gt.module_to_global,
    "_parameter_to_global": _gt.parameter_to_global,
    "_lay_out_like": lay_out_like,  # Module.load_state_dict: a whole plain value -> this rank's part
}

_enabled = [False]


def enable() -> None:
    """Route every op call through the sbp rules (once; later calls do nothing)."""
    if _enabled[0]:
        return
    _dispatch.OPS.update(TENSOR_METHODS)
    _dispatch.set_global_handler(handle)
    _enabled[0] = True


def disable() -> None:
    """Undo :func:`enable`: the hook slot and the op-table entries go, the fallback warns
    again. Global tensors made before stop working; make a new placement to enable again."""
    if not _enabled[0]:
        return
    _dispatch.set_global_handler(None)
    for name, fn in TENSOR_METHODS.items():
        if _dispatch.OPS.get(name) is fn:
            del _dispatch.OPS[name]
    forget_warnings()
    _enabled[0] = False


def is_enabled() -> bool:
    return _enabled[0]
