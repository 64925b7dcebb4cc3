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
"""

from __future__ import annotations

from ..autograd import dispatch
from .codegen import ELEMENTWISE, elementwise_expr, make_fused
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


def fuse_elementwise(g: Graph) -> list[tuple[int, ...]]:
    """Replace groups of elementwise calls by generated kernels; returns the groups fused."""
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
    fused = []
    for grp in groups:
        members = grp["members"]
        if len(members) < 2:
            continue
        inside = set(members)
        outputs = tuple(m for m in members if any(u not in inside for u in users[m]))
        node = make_fused(g, members, outputs)
        for m in members[:-1]:
            g.nodes[m] = Node("dead", name=g.nodes[m].name)
        g.nodes[members[-1]] = node
        fused.append(tuple(members))
    return fused


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
    add = dispatch.OPS["add"].__wrapped__
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
