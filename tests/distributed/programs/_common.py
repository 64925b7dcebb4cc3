"""Helpers shared by the rank programs of tests/distributed (no side effects at import)."""

from __future__ import annotations

import numpy as np

# reduce op name -> the NumPy reduction over the stacked per-rank inputs
REDUCE_REFS = {"sum": lambda xs: np.sum(xs, 0), "avg": lambda xs: np.mean(xs, 0),
               "max": lambda xs: np.max(xs, 0), "min": lambda xs: np.min(xs, 0),
               "prod": lambda xs: np.prod(xs, 0)}


def close(a, b, what="", tol=1e-5) -> None:
    """``a`` equals ``b`` within ``tol`` (relative and absolute), compared in float64."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = np.abs(a - b).max() if a.size else 0.0
    assert np.allclose(a, b, rtol=tol, atol=tol), (what, err)


def rank_data(rank: int, shape, dtype=np.float32, seed: int = 0) -> np.ndarray:
    """Rank ``rank``'s input, rebuilt on any rank from its seed: integers in [-5, 5], bools,
    or standard normal floats."""
    g = np.random.default_rng(1000 * seed + rank)
    kind = np.dtype(dtype).kind
    if kind in "iu":
        return g.integers(-5, 6, size=shape).astype(dtype)
    if kind == "b":
        return g.random(shape) < 0.5
    return g.standard_normal(shape).astype(dtype)


def raises(exc, fn, *needles: str) -> BaseException:
    """Call ``fn()``: it must raise ``exc`` (a type or tuple) whose message holds every
    needle. Returns the exception."""
    try:
        fn()
    except exc as e:
        for needle in needles:
            assert needle in str(e), (needle, str(e))
        return e
    raise AssertionError(f"{fn} raised no {exc}")


def start_failing_job():
    """The start of the failure programs: ``comm.init()`` and collective #1, which every rank
    reaches; returns the world communicator."""
    from shardflow import comm

    w = comm.init()
    w.all_reduce(np.ones(4, np.float32))  # collective #1 everyone reaches
    return w


def spread(t, mesh, placements):
    """``distribute_tensor(t, mesh, placements)`` that stays differentiable with respect to
    ``t`` (the whole value on every rank): ``DTensor.from_local(t, mesh, [Replicate()] *
    ndim).redistribute(mesh, placements)``, as in PyTorch. ``distribute_tensor`` itself
    returns a new leaf, as PyTorch's does, so gradients would not reach ``t``."""
    from shardflow.distributed import from_local, sbp

    return from_local(t, mesh, [sbp.broadcast] * mesh.ndim).redistribute(mesh, placements)
