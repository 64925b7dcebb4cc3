"""Shape ops: layout moves with the dims, no data moves unless a split cannot follow.

* ``transpose``/``swapaxes``/``swapdims``/``permute``/``t``: a split moves with its dim;
* ``contiguous``/``clone``/``_to_dtype``/``_to_device``/``detach``: layout unchanged;
* ``view``/``reshape``/``flatten``/``unflatten``/``ravel``/``(un)squeeze``: a split stays
  when its dim leads its group of merged/split dims on both sides and divides evenly (the
  local call gets the local shape); otherwise the op falls back. A view is linear, so a
  Partial passes through;
* ``expand``/``expand_as``/``broadcast_to``: splits shift by the new leading dims (a
  Partial falls back);
* ``split``/``chunk``: pieces of an unsplit dim keep the layout; a ``split(d, blocks=k)``
  tensor cut into its ``k`` blocks gives ``k`` plain ``split(d)`` pieces with no
  communication (the fused-qkv layout);
* ``cat`` gathers the concatenated dim if split; ``stack`` shifts splits past the new dim.
"""

from __future__ import annotations

import math

from ...autograd import Tensor
from ...autograd import dispatch as _dispatch
from ..sbp import Split, broadcast
from ..spec import GlobalSpec
from .propagate import run_on_shards
from .registry import RuleSet

__all__ = ["family"]

family = RuleSet("shape")


def _with(sbp_tuple, k, value):
    """``sbp_tuple`` with mesh dimension ``k`` set to ``value``."""
    t = list(sbp_tuple)
    t[k] = value
    return tuple(t)


@family.rule("transpose", "swapaxes", "swapdims", "permute", "t", "movedim", "moveaxis")
def _permute_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    nd = len(spec.shape)
    if name in ("transpose", "swapaxes", "swapdims"):
        d0 = args[1] if len(args) > 1 else kwargs.get("dim0", kwargs.get("axis0"))  # swapaxes: axis0/1
        d1 = args[2] if len(args) > 2 else kwargs.get("dim1", kwargs.get("axis1"))
        perm = list(range(nd))
        d0, d1 = d0 % nd, d1 % nd
        perm[d0], perm[d1] = perm[d1], perm[d0]
    elif name == "t":
        perm = list(range(nd))[::-1]
    elif name == "permute":
        dims = args[1:] if len(args) > 2 else (args[1] if len(args) > 1 else kwargs["dims"])
        if isinstance(dims, int):
            dims = (dims,)
        perm = [d % nd for d in dims]
    else:
        return NotImplemented
    inv = {p: i for i, p in enumerate(perm)}
    out = tuple(Split(inv[s.dim], s.blocks) if s.is_split() else s for s in spec.sbp)
    out_shape = tuple(spec.shape[p] for p in perm)
    return run_on_shards(name, func, args, kwargs, {}, [out], [out_shape])


@family.rule("contiguous", "clone", "_to_dtype", "_to_device", "detach")
def _identity_layout_rule(name, func, args, kwargs):
    t = args[0]
    return run_on_shards(name, func, args, kwargs, {}, [t._spec.sbp], [t._spec.shape])


def _resolve_shape(shape, numel):
    shape = list(shape)
    if -1 in shape:
        i = shape.index(-1)
        rest = math.prod(s for j, s in enumerate(shape) if j != i)
        shape[i] = numel // rest if rest else 0
    return tuple(shape)


def _view_groups(a, b):
    """Pairs of dim ranges (ia, ib) with equal products: how a reshape regroups dims."""
    groups, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        si, sj = [i], [j]
        pa = a[i] if i < len(a) else 1
        pb = b[j] if j < len(b) else 1
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb and i < len(a):
                pa *= a[i]
                si.append(i)
                i += 1
            elif j < len(b):
                pb *= b[j]
                sj.append(j)
                j += 1
            else:
                break
        groups.append(([x for x in si if x < len(a)], [x for x in sj if x < len(b)]))
    return groups


def _view_sbp(spec, new_shape):
    """Output sbp of a view of ``spec`` to ``new_shape``, or None if a split cannot stay."""
    groups = _view_groups(spec.shape, new_shape)
    out = []
    for k, s in enumerate(spec.sbp):
        if not s.is_split():
            out.append(s)
            continue
        n = spec.placement.shape[k]
        for ga, gb in groups:
            if s.dim in ga:
                # size-1 dims do not matter; the split dim must lead its group, on both sides
                ga_real = [d for d in ga if spec.shape[d] != 1]
                gb_real = [d for d in gb if new_shape[d] != 1]
                if not ga_real or ga_real[0] != s.dim or not gb_real:
                    return None
                od = gb_real[0]
                la, lb = spec.shape[s.dim], new_shape[od]
                if la == lb and len(ga_real) == 1 and len(gb_real) == 1:
                    out.append(Split(od, s.blocks))
                elif la % (n * s.blocks) == 0 and lb % (n * s.blocks) == 0 and (
                    s.blocks == 1 or la == lb
                ):
                    out.append(Split(od, s.blocks))
                else:
                    return None
                break
        else:
            return None
    # Two mesh dims splitting one tensor dim: keep it only when the dim passes unchanged.
    return tuple(out)


def _view_like(name, func, t, new_shape, args, kwargs, rebuild):
    spec = t._spec
    out_sbp = _view_sbp(spec, new_shape)  # a view is linear: Partial passes through
    if out_sbp is None:
        return NotImplemented
    out_spec = GlobalSpec(spec.placement, out_sbp, new_shape)
    local_shape = out_spec.local_shape()

    def local_args(largs, lkw):
        return rebuild(largs, lkw, local_shape)

    return run_on_shards(name, func, args, kwargs, {}, [out_sbp], [new_shape], local_args)


@family.rule("view", "reshape")
def _view_rule(name, func, args, kwargs):
    t = args[0]
    shape = args[1:] if len(args) > 1 else (kwargs.get("shape"),)
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    if any(isinstance(s, Tensor) for s in shape):
        return NotImplemented
    new_shape = _resolve_shape(shape, math.prod(t._spec.shape))

    def rebuild(largs, lkw, local_shape):
        return [largs[0], tuple(local_shape)], {}

    return _view_like(name, func, t, new_shape, args, kwargs, rebuild)


@family.rule("flatten", "unsqueeze", "squeeze", "unflatten", "ravel")
def _reshape_family_rule(name, func, args, kwargs):
    t = args[0]
    shape = t._spec.shape
    nd = len(shape)
    if name == "flatten":
        s0 = args[1] if len(args) > 1 else kwargs.get("start_dim", 0)
        s1 = args[2] if len(args) > 2 else kwargs.get("end_dim", -1)
        if nd == 0:
            new = (1,)
        else:
            s0, s1 = s0 % nd, s1 % nd
            new = (*shape[:s0], math.prod(shape[s0:s1 + 1]), *shape[s1 + 1:])
    elif name == "ravel":
        new = (math.prod(shape),)
    elif name == "unsqueeze":
        d = args[1] if len(args) > 1 else kwargs["dim"]
        d = d % (nd + 1)
        new = (*shape[:d], 1, *shape[d:])
    elif name == "squeeze":
        d = args[1] if len(args) > 1 else kwargs.get("dim", None)
        if d is None:
            new = tuple(s for s in shape if s != 1)
        else:
            ds = {x % nd for x in ((d,) if isinstance(d, int) else d)} if nd else set()
            new = tuple(s for i, s in enumerate(shape) if not (i in ds and s == 1))
    else:
        d = args[1] % nd
        sizes = tuple(args[2])
        new = (*shape[:d], *_resolve_shape(sizes, shape[d]), *shape[d + 1:])
    reshape = _dispatch.OPS["reshape"].__wrapped__

    def rebuild(largs, lkw, local_shape):
        return [largs[0], tuple(local_shape)], {}

    return _view_like(name, lambda x, s: reshape(x, s), t, new, args, kwargs, rebuild)


@family.rule("expand", "expand_as", "broadcast_to")
def _expand_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    if name == "expand_as":
        new = tuple(args[1].shape)
    else:
        sizes = args[1:] if len(args) > 1 else (kwargs.get("size"),)
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        nd_new = len(sizes)
        off = nd_new - len(spec.shape)
        new = tuple(spec.shape[i - off] if (s == -1) else s for i, s in enumerate(sizes))
    off = len(new) - len(spec.shape)
    out = []
    for s in spec.sbp:
        if s.is_partial():
            return NotImplemented
        out.append(Split(s.dim + off, s.blocks) if s.is_split() else s)
    local_new = GlobalSpec(spec.placement, out, new).local_shape()
    expand = _dispatch.OPS["expand"].__wrapped__
    if name == "expand_as" and args[1]._spec is not None:
        args = (t,)

    def local_args(largs, lkw):
        return [largs[0], tuple(local_new)], {}

    return run_on_shards(name, lambda x, s: expand(x, s), args[:1], {}, {}, [tuple(out)], [new], local_args)


@family.rule("split", "chunk")
def _split_rule(name, func, args, kwargs):
    t = args[0]
    spec = t._spec
    nd = len(spec.shape)
    arg = args[1] if len(args) > 1 else kwargs.get("split_size_or_sections", kwargs.get("chunks"))
    dim = (args[2] if len(args) > 2 else kwargs.get("dim", 0)) % nd
    size = spec.shape[dim]
    if name == "chunk":
        c = -(-size // arg)
        sizes = [min(c, size - i * c) for i in range(arg) if i * c < size]
    elif isinstance(arg, int):
        sizes = [min(arg, size - i) for i in range(0, size, arg)]
    else:
        sizes = list(arg)
    splitters = [(k, s) for k, s in enumerate(spec.sbp) if s.is_split() and s.dim == dim]
    if not splitters:
        shapes = [tuple(sz if d == dim else spec.shape[d] for d in range(nd)) for sz in sizes]
        return run_on_shards(name, func, args, kwargs, {}, [spec.sbp] * len(sizes), shapes)
    if len(splitters) == 1 and splitters[0][1].blocks == len(sizes) and len(set(sizes)) == 1:
        k, s = splitters[0]
        out = _with(spec.sbp, k, Split(dim))
        shapes = [tuple(sizes[0] if d == dim else spec.shape[d] for d in range(nd))] * len(sizes)
        # Locally: this rank's shard holds its chunk of every block, in block order.
        local_piece = t.array.shape[dim] // len(sizes)
        split_fn = _dispatch.OPS["split"].__wrapped__

        def local_args(largs, lkw):
            return [largs[0], local_piece, dim], {}

        return run_on_shards(name, lambda x, a, d: split_fn(x, a, d), args, kwargs, {}, [out] * len(sizes),
                    shapes, local_args)
    return NotImplemented


@family.rule("cat", "concat", "concatenate", "stack")
def _cat_rule(name, func, args, kwargs):
    tensors = list(args[0])
    if any(not isinstance(x, Tensor) or x._spec is None for x in tensors):
        return NotImplemented
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    spec = tensors[0]._spec
    nd = len(spec.shape)
    if any(s.is_partial() for s in spec.sbp):
        return NotImplemented
    if name == "stack":  # a new dim: splits move past it, nothing is gathered
        dim = dim % (nd + 1)
        src = spec.sbp
        out = tuple(Split(s.dim + (s.dim >= dim), s.blocks) if s.is_split() else s for s in spec.sbp)
        shape = (*spec.shape[:dim], len(tensors), *spec.shape[dim:])
    else:  # concatenating along a split dim gathers it first
        dim = dim % nd
        src = out = tuple(broadcast if (s.is_split() and s.dim == dim) else s for s in spec.sbp)
        shape = tuple(sum(x._spec.shape[dim] for x in tensors) if d == dim else spec.shape[d] for d in range(nd))
    targets = {id(x): src for x in tensors}
    return run_on_shards(name, func, args, kwargs, targets, [out], [shape])
