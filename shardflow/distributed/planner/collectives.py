"""Alpha-beta costs of collectives: the formulas, and their fit to measurements.

For a group of ``n`` ranks moving a buffer of ``S`` bytes (each rank's input; for
all-gather its output) over links of bandwidth ``B`` bytes/s with a per-message latency
``alpha`` (Thakur, Rabenseifner and Gropp 2005; NCCL's ring and double-binary-tree
algorithms, Sanders et al. / the NCCL 2.4 notes):

=================  ====================================  ===========================
collective         ring                                  tree (NCCL, all-reduce only)
=================  ====================================  ===========================
all-reduce         ``2(n-1) alpha + 2(n-1)/n S/B``       ``2 log2(n) alpha + 2 S/B``
reduce-scatter     ``(n-1) alpha + (n-1)/n S/B``
all-gather         ``(n-1) alpha + (n-1)/n S/B``
broadcast          ``(n-1) alpha + S/B`` (pipelined)
send/recv          ``alpha + S/B``
=================  ====================================  ===========================

NCCL picks the faster of ring and tree for an all-reduce; the model does the same. ``B`` is
the *bus bandwidth* of the group's slowest link (``profile.py`` derives it from where the
group's ranks sit: NVLink inside a node, the node's NICs shared by the groups that cross
them). Measured profiles (Open MPI here) keep a fitted ``alpha + beta * S`` per collective,
group size and job size instead (:func:`fit_alpha_beta`).
"""

from __future__ import annotations

import math

__all__ = ["KINDS", "ring_time", "tree_allreduce_time", "formula_time", "fit_alpha_beta",
           "bus_bytes"]

KINDS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "send_recv")


def ring_time(kind: str, n: int, nbytes: float, alpha: float, bw: float) -> float:
    """The ring (or point-to-point) formula of ``kind`` (module table); seconds."""
    if n <= 1 and kind != "send_recv":
        return 0.0
    if kind == "all_reduce":
        return 2 * (n - 1) * alpha + 2 * (n - 1) / n * nbytes / bw
    if kind in ("reduce_scatter", "all_gather"):
        return (n - 1) * alpha + (n - 1) / n * nbytes / bw
    if kind == "broadcast":
        return (n - 1) * alpha + nbytes / bw
    if kind == "send_recv":
        return alpha + nbytes / bw
    raise ValueError(f"unknown collective {kind!r}; expected one of {KINDS}")


def tree_allreduce_time(n: int, nbytes: float, alpha: float, bw: float) -> float:
    if n <= 1:
        return 0.0
    return 2 * math.ceil(math.log2(n)) * alpha + 2 * nbytes / bw


def formula_time(kind: str, n: int, nbytes: float, alpha: float, bw: float,
                 tree: bool = True) -> float:
    """NCCL's choice: the faster of ring and tree for all-reduce, the ring otherwise."""
    t = ring_time(kind, n, nbytes, alpha, bw)
    if kind == "all_reduce" and tree:
        t = min(t, tree_allreduce_time(n, nbytes, alpha, bw))
    return t


def bus_bytes(kind: str, n: int, nbytes: float) -> float:
    """Bytes each rank puts on the wire (the ring's bandwidth term times B): the
    communication volume the planner reports."""
    if n <= 1 and kind != "send_recv":
        return 0.0
    if kind == "all_reduce":
        return 2 * (n - 1) / n * nbytes
    if kind in ("reduce_scatter", "all_gather"):
        return (n - 1) / n * nbytes
    return float(nbytes)


def fit_alpha_beta(sizes, times) -> tuple[float, float]:
    """Least-squares ``time = alpha + beta * size`` with both terms kept non-negative,
    weighted by ``1/time`` so that small and large messages count alike (relative error)."""
    pts = [(float(s), float(t)) for s, t in zip(sizes, times) if t > 0]
    if not pts:
        raise ValueError("fit_alpha_beta: no positive timings")
    if len(pts) == 1:
        s, t = pts[0]
        return 0.0, t / s if s else 0.0
    w = [1.0 / t for _, t in pts]
    sw = sum(wi * wi for wi in w)
    sx = sum(wi * wi * s for wi, (s, _) in zip(w, pts))
    sy = sum(wi * wi * t for wi, (_, t) in zip(w, pts))
    sxx = sum(wi * wi * s * s for wi, (s, _) in zip(w, pts))
    sxy = sum(wi * wi * s * t for wi, (s, t) in zip(w, pts))
    det = sw * sxx - sx * sx
    if det <= 0:
        return sy / sw, 0.0
    beta = (sw * sxy - sx * sy) / det
    alpha = (sy - beta * sx) / sw
    if beta < 0:
        return sy / sw, 0.0
    if alpha < 0:
        return 0.0, sxy / sxx
    return alpha, beta
