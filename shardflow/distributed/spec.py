"""The global spec: what makes a ``Tensor`` global (placement, sbp tuple, logical shape).

The lowest module of the global-tensor core (it imports only :mod:`.sbp`, :mod:`.layout`
and autograd): everything that makes, reads or re-lays global tensors builds on it —
conversions (:mod:`.global_tensor`), sbp rules (:mod:`.rules`), ZeRO/FSDP shards,
checkpoints. A global tensor is an ordinary ``Tensor`` whose ``.array`` is this rank's shard
and whose ``_spec`` is a :class:`GlobalSpec`; :func:`make_global` is the one place that
sets it.

The placement is only read here (``.ndim``, ``.shape``, ``.coordinate``), never imported:
the mesh class (:mod:`.placement`) sits above the core, since making one enables the
global route (:mod:`.route`).
"""

from __future__ import annotations

from ..autograd import Tensor
from . import layout
from .sbp import as_sbp_tuple, grad_sbp

__all__ = ["GlobalSpec", "make_global", "normalize_sbp"]


class GlobalSpec:
    """Placement, sbp (one per mesh dimension) and logical shape of a global tensor."""

    __slots__ = ("placement", "sbp", "shape")

    def __init__(self, placement, sbp, shape):
        self.placement = placement
        self.sbp = tuple(sbp)
        self.shape = tuple(int(s) for s in shape)

    def grad_spec(self) -> GlobalSpec:
        return GlobalSpec(self.placement, tuple(grad_sbp(s) for s in self.sbp), self.shape)

    def local_shape(self) -> tuple[int, ...]:
        p = self.placement
        return layout.local_shape(self.shape, p.shape, p.coordinate, self.sbp)

    def with_sbp(self, sbp) -> GlobalSpec:
        return GlobalSpec(self.placement, sbp, self.shape)

    def __repr__(self) -> str:
        return f"GlobalSpec({self.placement}, sbp={self.sbp}, shape={self.shape})"


def _set_grad_spec(t: Tensor) -> None:
    spec = t._spec
    if spec is not None and t.grad is not None:
        t.grad._spec = spec.grad_spec()


def make_global(t: Tensor, spec: GlobalSpec) -> Tensor:
    """Mark ``t`` (its ``.array`` already this rank's shard) as global with ``spec``."""
    t._spec = spec
    if t.grad_fn is None and "_global_grad_hook" not in t.__dict__:
        # A leaf's .grad is made by the engine as a plain tensor; give it the grad layout.
        t.__dict__["_global_grad_hook"] = True
        t.register_post_accumulate_grad_hook(_set_grad_spec)
    return t


def normalize_sbp(sbp, placement, ndim: int):
    """``sbp`` (one value or one per mesh dimension) as a tuple with non-negative split dims."""
    return layout.normalize_dim_sbp(as_sbp_tuple(sbp, placement.ndim), ndim)
