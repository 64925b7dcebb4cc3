"""Sbp propagation: how each op runs on global tensors, one module per op family.

Once the global route is on (``route.enable()``, called when a placement is made), every
registered op call reaches :func:`~.handler.handle`. With no global argument the op runs as
usual. Otherwise the op's rule — looked up by its registered name in :data:`RULES` — decides,
per mesh dimension, the sbp each input must have (inserting boxing where the inputs disagree)
and the sbp and logical shape of each output; the op then runs on the shards
(:mod:`.propagate`). An op with no rule for its arguments falls back to gather -> compute ->
re-shard (:mod:`.fallback`: warned once per op, listed by ``comm_plan()``).

=================  ===========================================================================
module             ops
=================  ===========================================================================
``elementwise``    the elementwise name lists (arithmetic, math, activations, predicates), their
                   in-place forms, ``where``
``reduce``         ``sum``, ``mean``, ``amax``, ``amin``
``matmul``         ``matmul``, ``mm``, ``bmm``, ``linear``
``shape``          views and reshapes, transposes, ``expand``, ``split``/``chunk``, ``cat``/``stack``
``index``          ``getitem`` (basic indexing)
``nn``             ``embedding``, ``softmax``, ``layer_norm``, attention, ``conv*d``, dropout
``loss``           ``cross_entropy`` (batch split; class split without gathering the logits)
``creation``       ``placement=``/``sbp=`` on any creation op; ``*_like`` of a global tensor
=================  ===========================================================================

Each family registers its rules on its own :class:`~.registry.RuleSet`, next to the names
of the ops they describe; :mod:`.handler` joins the families into :data:`RULES` (an op in two
families is refused). The rules cannot live inside ``shardflow/ops`` (layer L3: it may not
import the sbp vocabulary, boxing or placements of this L6 package), so they are keyed by the
op's registered name.

Gradient convention (``sbp.grad_sbp``): when an input is B on a mesh dimension where an
output is not B, that input's local gradient is only a partial sum, so the input is wrapped
in ``BroadcastUse`` whose backward all-reduces it (Megatron's ``f``; data parallel's
gradient all-reduce).
"""

from .handler import FAMILIES, RULES, handle
from .registry import RuleSet

__all__ = ["handle", "RULES", "FAMILIES", "RuleSet"]
