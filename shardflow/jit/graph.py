"""The graph IR of ``shardflow.compile``: a straight-line list of op calls on values.

A ``Graph`` holds ``nodes`` in execution order. Each ``Node`` is one of

* ``input``: the i-th tensor argument of the compiled function (``index``);
* ``const``: a tensor the trace met that no node made (a parameter, a buffer, a tensor in the
  function's closure), held by reference, so in-place updates of it (an optimizer step) are
  seen by the next replay;
* ``call``: ``target(*args, **kwargs)``, ``target`` the unrouted op function (what the
  dispatcher calls), ``name`` its registered op name;
* ``fused``: a generated kernel for a group of elementwise calls (``passes.fuse_elementwise``);
  it sits where the group's last member was and writes the values of the members that other
  nodes or the graph outputs read (``outputs``: their node indices, so ``Ref``s to them stay
  valid); the other members become ``dead``;
* ``dead``: removed by a pass (skipped by the executor).

Arguments refer to values with ``Ref(node, item)`` (``item`` picks an element when an op
returns a tuple); anything else in ``args`` / ``kwargs`` is a Python constant. ``Graph.outputs``
is the function's result with ``Ref`` leaves (a Ref, or a tuple / list / dict of them).
``meta[node] = (shape, dtype)`` of a single-tensor result, recorded by the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Ref:
    node: int
    item: int | None = None

    def __repr__(self):
        return f"%{self.node}" if self.item is None else f"%{self.node}[{self.item}]"


@dataclass
class Node:
    kind: str  # input | const | call | fused
    name: str = ""
    target: Any = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    index: int = -1  # input position
    value: Any = None  # const: the Tensor
    outputs: tuple = ()  # fused: indices of the group members whose values it writes

    def refs(self):
        """Every Ref in args and kwargs (nested lists/tuples/dicts too)."""
        out: list[Ref] = []
        _collect((self.args, self.kwargs), out)
        return out


def _collect(obj, out):
    if isinstance(obj, Ref):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _collect(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _collect(o, out)


def map_refs(obj, fn):
    """``obj`` with every Ref leaf replaced by ``fn(ref)`` (containers rebuilt)."""
    if isinstance(obj, Ref):
        return fn(obj)
    if isinstance(obj, tuple):
        return tuple(map_refs(o, fn) for o in obj)
    if isinstance(obj, list):
        return [map_refs(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: map_refs(v, fn) for k, v in obj.items()}
    return obj


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    outputs: Any = None
    meta: dict = field(default_factory=dict)

    def add(self, node: Node) -> Ref:
        self.nodes.append(node)
        return Ref(len(self.nodes) - 1)

    def users(self) -> dict[int, list[int]]:
        """node index -> indices of the nodes (and -1 for the graph outputs) that read it."""
        u: dict[int, list[int]] = {i: [] for i in range(len(self.nodes))}
        for i, n in enumerate(self.nodes):
            for r in n.refs():
                u[r.node].append(i)
        out: list[Ref] = []
        _collect(self.outputs, out)
        for r in out:
            u[r.node].append(-1)
        return u

    def count(self, kind: str) -> int:
        return sum(n.kind == kind for n in self.nodes)

    def __str__(self) -> str:
        lines = []
        for i, n in enumerate(self.nodes):
            shape = self.meta.get(i)
            ann = f"  # {tuple(shape[0])} {shape[1]}" if shape else ""
            if n.kind == "input":
                lines.append(f"%{i} = input[{n.index}]{ann}")
            elif n.kind == "const":
                lines.append(f"%{i} = const{ann}")
            elif n.kind == "fused":
                outs = ", ".join(f"%{o}" for o in n.outputs)
                lines.append(f"{outs} = fused[{n.name}]({_fmt(n.args)})")
            elif n.kind == "dead":
                continue
            else:
                kw = "".join(f", {k}={v!r}" for k, v in n.kwargs.items())
                lines.append(f"%{i} = {n.name}({_fmt(n.args)}{kw}){ann}")
        lines.append(f"return {self.outputs!r}")
        return "\n".join(lines)


def _fmt(args):
    return ", ".join(repr(a) for a in args)
