"""``torch.fx.subgraph_rewriter.replace_pattern`` (also ``torch.fx.replace_pattern``): find
every occurrence of a pattern in a GraphModule's graph and put a replacement in its place.

``pattern`` and ``replacement`` are functions (traced with :func:`symbolic_trace`) or
GraphModules with the same placeholders; the pattern's placeholders match any value, its
other nodes match nodes of the same opcode and target whose arguments match in turn
(constants by equality, lists / tuples / dicts element by element). A match is kept when it
overlaps no earlier one and no node inside it but the pattern's result is used outside it,
so removing it cannot break the graph (torch's rule). Each replacement's nodes are inserted
before the first user of the match's result (torch's place), the result's uses go to the replacement's result, the matched
nodes are erased, the module recompiled. Returns the matches (``Match(anchor, nodes_map)``: the
pattern's result node, and a map from pattern nodes to graph nodes), as torch's.

Deviation: a pattern must return one value (torch also matches multi-output patterns);
otherwise NotImplementedError.
"""

from __future__ import annotations

from typing import NamedTuple

from .graph_module import GraphModule, _copy_attr
from .node import Node, map_arg
from .tracer import symbolic_trace


class Match(NamedTuple):
    anchor: Node
    nodes_map: dict


def _as_graph_module(f) -> GraphModule:
    return f if isinstance(f, GraphModule) else symbolic_trace(f)


def _match_arg(p, g, m: dict) -> bool:
    if isinstance(p, Node):
        return isinstance(g, Node) and _match_node(p, g, m)
    if isinstance(g, Node):
        return False
    if isinstance(p, list | tuple):
        return (type(p) is type(g) and len(p) == len(g)
                and all(_match_arg(a, b, m) for a, b in zip(p, g, strict=True)))
    if isinstance(p, dict):
        return isinstance(g, dict) and p.keys() == g.keys() and all(_match_arg(p[k], g[k], m) for k in p)
    try:
        return type(p) is type(g) and bool(p == g)
    except Exception:  # values without a plain truth value (tensors): not equal
        return False


def _match_node(p: Node, g: Node, m: dict) -> bool:
    if p in m:
        return m[p] is g
    if p.op == "placeholder":
        m[p] = g
        return True
    if p.op != g.op or p.target != g.target:
        return False
    if not (_match_arg(p.args, g.args, m) and _match_arg(p.kwargs, g.kwargs, m)):
        return False
    m[p] = g
    return True


def replace_pattern(gm: GraphModule, pattern, replacement) -> list[Match]:
    """Replace every non-overlapping occurrence of ``pattern`` in ``gm`` (module docstring)."""
    p_graph = _as_graph_module(pattern).graph
    r_gm = _as_graph_module(replacement)
    p_output = [n for n in p_graph.nodes if n.op == "output"][0]
    anchor = p_output.args[0]
    if not isinstance(anchor, Node):
        raise NotImplementedError("replace_pattern: the pattern must return one traced value (a node), "
                                  f"got {type(anchor).__name__}; multi-output patterns are not built")
    p_placeholders = [n for n in p_graph.nodes if n.op == "placeholder"]
    r_placeholders = [n for n in r_gm.graph.nodes if n.op == "placeholder"]
    if len(p_placeholders) != len(r_placeholders):
        raise ValueError(f"replace_pattern: the pattern takes {len(p_placeholders)} inputs and the "
                         f"replacement {len(r_placeholders)}; give them the same parameters")

    graph = gm.graph
    taken: set = set()
    matches: list[Match] = []
    for node in list(graph.nodes):
        if node in taken or node.op in ("placeholder", "output"):
            continue
        nodes_map: dict = {}
        if not _match_node(anchor, node, nodes_map):
            continue
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder"]
        if any(g in taken for g in inner):
            continue
        inner_set = set(inner)
        if any(u not in inner_set for g in inner if g is not node for u in g.users):
            continue  # an intermediate value is used outside the match
        taken.update(inner)
        matches.append(Match(anchor, nodes_map))

    for match in matches:
        env = {r: match.nodes_map[p] for p, r in zip(p_placeholders, r_placeholders, strict=True)}
        result = None
        # torch's insertion point: before the result's first user (right after it when unused)
        result_node = match.nodes_map[match.anchor]
        users = [n for n in graph.nodes if n in result_node.users]
        insert_point = users[0] if users else result_node.next
        with graph.inserting_before(insert_point):
            for r in r_gm.graph.nodes:
                if r.op == "placeholder":
                    continue
                if r.op == "output":
                    result = map_arg(r.args[0], env.__getitem__)
                    break
                if r.op in ("get_attr", "call_module"):
                    _copy_attr(r_gm, gm, r.target)
                env[r] = graph.node_copy(r, env.__getitem__)
        result_node.replace_all_uses_with(result)
        for p in reversed(list(p_graph.nodes)):  # users before what they use
            g = match.nodes_map.get(p)
            if g is not None and p.op != "placeholder":
                graph.erase_node(g)
    gm.recompile()
    return matches
