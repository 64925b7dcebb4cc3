"""SBP: how one mesh dimension lays a logical tensor over its ranks (OneFlow's vocabulary).

Three kinds, small frozen values (PyTorch's ``placement_types.py`` has the same idea as
``Shard`` / ``Replicate`` / ``Partial``):

* ``split(dim)`` — ``S(dim)``: the ranks of the mesh dimension hold consecutive chunks of
  ``dim``, cut with ``torch.chunk``'s rule (chunk size ``ceil(n / ranks)``, the last chunks
  may be short or empty). ``split(dim, blocks=k)`` first cuts ``dim`` into ``k`` equal
  blocks and chunks each block (rank r holds its chunk of every block, concatenated): the
  layout of a fused ``qkv`` projection whose q, k and v parts are each split by heads
  (PyTorch's ``_StridedShard``).
* ``broadcast`` — ``B``: every rank holds the whole tensor.
* ``partial_sum`` / ``partial_max`` — ``P``: every rank holds a tensor of the full shape,
  and the logical tensor is their sum (max).

A global tensor has one sbp per mesh dimension (a tuple for an N-d placement). Gradients
follow one convention, the *canonical gradient layout* :func:`grad_sbp`: the gradient of an
``S(d)`` tensor is ``S(d)`` and the gradient of a ``B`` or ``P`` tensor is ``B`` (every rank
holds the whole gradient). Ops and boxings keep to it, which is what makes Megatron's
communication pattern fall out of the rules (``docs/GLOBAL.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "SbpType", "Split", "Broadcast", "Partial", "split", "broadcast", "partial_sum",
    "partial_max", "grad_sbp", "as_sbp_tuple", "Shard", "Replicate", "Placement",
]


class SbpType:
    """Base of the three sbp kinds (PyTorch's ``Placement``)."""

    __slots__ = ()

    def is_split(self) -> bool:
        return False

    def is_broadcast(self) -> bool:
        return False

    def is_partial(self) -> bool:
        return False

    # PyTorch's Placement predicates (``p.is_shard(dim=None)``, ``is_replicate``)
    def is_shard(self, dim: int | None = None) -> bool:
        return self.is_split() and (dim is None or self.dim == dim)

    def is_replicate(self) -> bool:
        return self.is_broadcast()


@dataclass(frozen=True, repr=False)
class Split(SbpType):
    dim: int
    blocks: int = 1

    def __post_init__(self):
        if not isinstance(self.dim, int) or isinstance(self.dim, bool):
            raise TypeError(f"sbp.split(dim) takes an int dim, got {self.dim!r}")
        if not isinstance(self.blocks, int) or self.blocks < 1:
            raise ValueError(f"sbp.split(dim, blocks=k) needs k >= 1, got {self.blocks!r}")

    def is_split(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"S({self.dim})" if self.blocks == 1 else f"S({self.dim}, blocks={self.blocks})"


@dataclass(frozen=True, repr=False)
class Broadcast(SbpType):
    def is_broadcast(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "B"


@dataclass(frozen=True, repr=False, init=False)
class Partial(SbpType):
    """``P``: ``Partial(op="sum")``; PyTorch's spelling ``Partial(reduce_op="sum")`` too."""

    op: str = "sum"

    def __init__(self, op: str = "sum", *, reduce_op: str | None = None):
        op = reduce_op if reduce_op is not None else op
        if op not in ("sum", "max"):
            raise ValueError(
                f"sbp.Partial(op) takes 'sum' or 'max', got {op!r} (PyTorch's 'avg', 'min' "
                "and 'product' partial placements are not supported)"
            )
        object.__setattr__(self, "op", op)

    @property
    def reduce_op(self) -> str:
        """PyTorch's name for ``op``."""
        return self.op

    def is_partial(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "P" if self.op == "sum" else "P(max)"


def split(dim: int, blocks: int = 1) -> Split:
    return Split(dim, blocks)


broadcast = Broadcast()
partial_sum = Partial("sum")
partial_max = Partial("max")


# PyTorch's DTensor names are the sbp classes themselves, so ``Shard(0) == split(0)``,
# ``Replicate() == broadcast`` and ``isinstance(p, Shard)`` / ``p.dim`` work as in PyTorch.
Shard = Split
Replicate = Broadcast
Placement = SbpType


def grad_sbp(sbp: SbpType) -> SbpType:
    """The canonical layout of the gradient of a tensor laid out as ``sbp``."""
    return sbp if sbp.is_split() else broadcast


def as_sbp_tuple(sbp, mesh_ndim: int) -> tuple[SbpType, ...]:
    """Normalise ``sbp`` (one value or a sequence) to one sbp per mesh dimension."""
    if isinstance(sbp, SbpType):
        items = (sbp,)
    elif isinstance(sbp, list | tuple):
        items = tuple(sbp)
    else:
        raise TypeError(
            f"sbp must be an sbp value (sbp.split(d), sbp.broadcast, sbp.partial_sum) or a "
            f"tuple of them, one per mesh dimension; got {sbp!r}"
        )
    for s in items:
        if not isinstance(s, SbpType):
            raise TypeError(
                f"sbp entries must be sbp.split(d) / sbp.broadcast / sbp.partial_sum; got {s!r}"
            )
    if len(items) != mesh_ndim:
        raise ValueError(
            f"one sbp per mesh dimension is needed: the placement has {mesh_ndim} dimension(s) "
            f"but {len(items)} sbp were given ({items}); pass a tuple of {mesh_ndim}"
        )
    return items
