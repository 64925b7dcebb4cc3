"""Graph passes of ``shardflow.compile``: dead-code elimination, common subexpressions,
elementwise fusion. Each takes a ``Graph`` and rewrites it in place; node indices never
change (removed nodes become ``dead``), so ``Ref``s stay valid.

* ``dce``: a node no output depends on is removed (the trace refuses impure ops, so every
  node is pure).
* ``cse``: two calls of one op function on the same arguments (same ``Ref``s, equal
  constants) compute the same value; the later one's users read the earlier one.
* ``split_linear_bias``: ``linear(x, w, b)`` whose result an elementwise op reads becomes
  ``linear(x, w)`` then ``add(., b)``, so the bias add fuses with the activation after it
  (one pass over the output instead of two: the GEMM epilogue of a fused compiler).
* ``fuse_elementwise``: maximal groups of elementwise calls (``codegen.ELEMENTWISE``) on one
  output shape become one generated Numba kernel (``codegen.py``). A call joins the group of
  one of its operands when (a) every other operand was made before the group's first member
  or inside the group (so running the group at its last member's place reads only ready
  values), and (b) no node outside the group has read the group yet (a read *closes* the
  group: the values it read must exist when it runs). Groups of one call stay as they are.
* ``fuse_elementwise_autograd``: the same groups for graphs that replay with autograd (training
  forwards, ``compile_step``): each becomes one ``call`` node applying a ``FusedFunction``
  (generated forward and backward kernels, ``fused_function.py``). ``fuse_for_training`` runs
  ``split_linear_bias`` and it when ``can_fuse`` (kernels on, NumPy arrays).
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..autograd import Tensor, dispatch
from .codegen import ELEMENTWISE, elementwise_expr, make_fused
from .fused_function import FusedCall, FusedGroup
from .graph import Graph, Node, Ref, map_refs


def dce(g: Graph) -> int:
    """Remove the nodes no graph output depends on; returns how many."""
    live = set()
    stack: list[Ref] = []
    map_refs(g.outputs, lambda r: stack.append(r))
    while stack:
        r = stack.pop()
        if r.node in live:
            continue
        live.add(r.node)
        stack.extend(g.nodes[r.node].refs())
    removed = 0
    for i, n in enumerate(g.nodes):
        if i not in live and n.kind in ("call", "const", "fused"):
            g.nodes[i] = Node("dead", name=n.name)
            removed += 1
    return removed


def _hashable(obj):
    if isinstance(obj, (list, tuple)):
        return tuple(_hashable(o) for o in obj)
    if isinstance(obj, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in obj.items()))
    hash(obj)  # TypeError for arrays and other unhashable constants
    return (type(obj).__name__, obj)


def cse(g: Graph) -> int:
    """Merge repeated calls (same op, same arguments); returns how many merged."""
    seen: dict = {}
    alias: dict[int, int] = {}
    merged = 0

    def rewrite(r: Ref) -> Ref:
        return Ref(alias.get(r.node, r.node), r.item)

    for i, n in enumerate(g.nodes):
        if n.kind != "call":
            continue
        n.args, n.kwargs = map_refs(n.args, rewrite), map_refs(n.kwargs, rewrite)
        try:
            # the op's registered name, not its function object: when another dispatcher hook
            # (the global-tensor handler) is installed, each recorded call's target is a fresh
            # closure around the same op
            key = (n.name, _hashable(n.args), _hashable(n.kwargs))
        except TypeError:
            continue
        first = seen.setdefault(key, i)
        if first != i:
            alias[i] = first
            merged += 1
    if merged:
        g.outputs = map_refs(g.outputs, rewrite)
        dce(g)
    return merged


def _groups(g: Graph) -> list[tuple[list[int], tuple[int, ...]]]:
    """The fusable groups of two or more elementwise calls: (members, outputs), outputs the
    members some node outside the group (or the graph's result) reads."""
    group_of: dict[int, int] = {}
    groups: list[dict] = []
    for i, n in enumerate(g.nodes):
        refs = n.refs() if n.kind == "call" else []
        joined = None
        if n.kind == "call" and elementwise_expr(g, i) is not None:
            shape = g.meta[i][0]
            for r in refs:
                gi = group_of.get(r.node)
                if gi is None or groups[gi]["closed"] or groups[gi]["shape"] != shape:
                    continue
                start = groups[gi]["members"][0]
                if all(group_of.get(o.node) == gi or o.node < start for o in refs):
                    joined = gi
                    break
            if joined is None:
                joined = len(groups)
                groups.append({"members": [], "closed": False, "shape": shape})
            groups[joined]["members"].append(i)
            group_of[i] = joined
        for r in (n.refs() if n.kind != "dead" else []):
            gi = group_of.get(r.node)
            if gi is not None and gi != joined:
                groups[gi]["closed"] = True
    users = g.users()
    out = []
    for grp in groups:
        members = grp["members"]
        if len(members) < 2:
            continue
        inside = set(members)
        out.append((members, tuple(m for m in members if any(u not in inside for u in users[m]))))
    return out


def fuse_elementwise(g: Graph) -> list[tuple[int, ...]]:
    """Replace groups of elementwise calls by generated kernels (inference graphs: ``fused``
    nodes run on raw arrays, no autograd); returns the groups fused."""
    fused = []
    for members, outputs in _groups(g):
        node = make_fused(g, members, outputs)
        for m in members[:-1]:
            g.nodes[m] = Node("dead", name=g.nodes[m].name)
        g.nodes[members[-1]] = node
        fused.append(tuple(members))
    return fused


def fuse_elementwise_autograd(g: Graph) -> list[tuple[int, ...]]:
    """``fuse_elementwise`` for graphs that replay with autograd (training forwards,
    ``compile_step``): each group becomes one ``call`` node at its last member's place whose
    target applies a ``FusedFunction`` (generated forward and backward kernels,
    ``fused_function.py``). One stored member: the node's result is that Tensor (its readers
    read ``Ref(node)``); several: a tuple, reader of the k-th stored member reads
    ``Ref(node, k)``. Returns the groups fused."""
    fused = []
    where: dict[int, Ref] = {}
    tuples: list[int] = []
    for members, outputs in _groups(g):
        last = members[-1]
        group = FusedGroup(g, members, outputs)
        names = "+".join(g.nodes[m].name for m in members)
        if outputs == (last,):
            where[last] = Ref(last)
        else:
            where.update({m: Ref(last, k) for k, m in enumerate(outputs)})
            tuples.append(last)
        for m in members[:-1]:
            g.nodes[m] = Node("dead", name=g.nodes[m].name)
        g.nodes[last] = Node("call", name=f"fused[{names}]", target=FusedCall(group),
                             args=tuple(group.ext))
        fused.append(tuple(members))
    if where:
        def remap(r: Ref) -> Ref:
            return where.get(r.node, r) if r.item is None else r

        for n in g.nodes:
            if n.kind in ("call", "fused"):
                n.args, n.kwargs = map_refs(n.args, remap), map_refs(n.kwargs, remap)
        g.outputs = map_refs(g.outputs, remap)
    for last in tuples:
        g.meta.pop(last, None)  # a tuple result (as a traced split's): no single meta
    return fused


def can_fuse(g: Graph, args) -> bool:
    """Fusion applies: the kernels are on (``SHARDFLOW_KERNELS``, numba importable) and every
    constant and tensor argument is a NumPy array (generated kernels are CPU only)."""
    return all(type(n.value.array) is np.ndarray for n in g.nodes if n.kind == "const") and \
        all(not isinstance(a, Tensor) or type(a.array) is np.ndarray for a in args) and \
        kernels.enabled()


def fuse_for_training(g: Graph, args) -> tuple[int, list[tuple[int, ...]]]:
    """The fusion passes of a graph that replays with autograd, when ``can_fuse``: linear's
    bias split off (``split_linear_bias``) and ``fuse_elementwise_autograd``. Returns (biases
    split, groups fused); (0, []) when fusion does not apply."""
    if not can_fuse(g, args):
        return 0, []
    split = split_linear_bias(g)
    return split, fuse_elementwise_autograd(g)


def group_names(g: Graph, fused) -> str:
    """``add+relu; add+gelu`` for the compile log: the op names of each fused group."""
    out = []
    for members in fused:
        n = g.nodes[members[-1]]
        out.append(n.name[6:-1] if n.kind == "call" else "+".join(n.name.split(", ")))
    return "; ".join(out) or "none"


def split_linear_bias(g: Graph) -> int:
    """Rewrite ``linear(x, w, b)`` read by an elementwise op as ``add(linear(x, w), b)``;
    returns how many. Rebuilds the node list (indices change; Refs are remapped)."""
    users = g.users()

    def wanted(i, n):
        if n.kind != "call" or n.name != "linear" or len(n.args) != 3 or n.kwargs:
            return False
        b = n.args[2]
        if not isinstance(b, Ref) or b.item is not None or i not in g.meta:
            return False
        shape, dtype = g.meta[i]
        bm = g.meta.get(b.node)
        return (bm is not None and bm == ((shape[-1],), dtype) and any(
            u >= 0 and g.nodes[u].kind == "call" and g.nodes[u].name in ELEMENTWISE for u in users[i]))

    todo = {i for i, n in enumerate(g.nodes) if wanted(i, n)}
    if not todo:
        return 0
    add = dispatch.plain("add")
    new_nodes: list[Node] = []
    new_meta: dict = {}
    where: dict[int, int] = {}

    def remap(r: Ref) -> Ref:
        return Ref(where[r.node], r.item)

    for i, n in enumerate(g.nodes):
        n.args, n.kwargs = map_refs(n.args, remap), map_refs(n.kwargs, remap)
        if i in todo:
            x, w, b = n.args
            new_nodes.append(Node("call", name="linear", target=n.target, args=(x, w)))
            new_meta[len(new_nodes) - 1] = g.meta[i]
            new_nodes.append(Node("call", name="add", target=add, args=(Ref(len(new_nodes) - 1), b)))
        else:
            new_nodes.append(n)
        where[i] = len(new_nodes) - 1
        if i in g.meta:
            new_meta[where[i]] = g.meta[i]
    g.nodes, g.meta = new_nodes, new_meta
    g.outputs = map_refs(g.outputs, remap)
    return len(todo)
