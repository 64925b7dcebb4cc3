"""Replays a ``Graph``: each node's op function on the values of its arguments, without the
autograd tape (the caller runs it under ``no_grad``), and the ``fused`` nodes' kernels on raw
NumPy arrays (2-D views, see ``codegen.py``)."""

from __future__ import annotations

import numpy as np

from ..autograd import _wrap
from .graph import Graph, Ref, map_refs


def run(g: Graph, args: tuple):
    env: list = [None] * len(g.nodes)

    def get(r: Ref):
        v = env[r.node]
        return v if r.item is None else v[r.item]

    for i, n in enumerate(g.nodes):
        k = n.kind
        if k == "call":
            env[i] = n.target(*map_refs(n.args, get), **map_refs(n.kwargs, get))
        elif k == "fused":
            _run_fused(g, n, env, get)
        elif k == "input":
            env[i] = args[n.index]
        elif k == "const":
            env[i] = n.value
    return map_refs(g.outputs, get)


def _run_fused(g, n, env, get):
    shape, dtype = g.meta[n.outputs[0]]
    N = shape[-1]
    M = int(np.prod(shape[:-1], dtype=np.int64))
    ins = []
    for r, kind in zip(n.args, n.kwargs["kinds"]):
        a = get(r).array
        a = np.ascontiguousarray(a)
        ins.append(a.reshape(M, N) if kind == "full" else a.reshape(-1))
    outs = [np.empty((M, N), dtype) for _ in n.outputs]
    n.target(*outs, *ins)
    for idx, o in zip(n.outputs, outs):
        env[idx] = _wrap(o.reshape(shape))

