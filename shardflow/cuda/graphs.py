"""``torch.cuda.CUDAGraph`` / ``graph`` / ``make_graphed_callables``: shardflow does not capture
CUDA graphs (its graph tool is ``shardflow.compile``, which replays recorded op calls).

``CUDAGraph()``, ``graph(...)`` and ``graph_pool_handle()`` raise: without CUDA the
``CudaNotAvailableError`` every CUDA-only call raises, with CUDA ``NotImplementedError``
naming ``shardflow.compile``. ``make_graphed_callables`` returns the callables unchanged: a
graphed callable computes what the eager one computes, so the program runs, without the
launch-overhead saving. ``is_current_stream_capturing()`` is False (nothing ever captures).
"""

from __future__ import annotations

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables",
           "is_current_stream_capturing"]


def _refuse(what: str):
    from . import _require

    _require(what)
    raise NotImplementedError(
        f"shardflow.cuda.{what}: shardflow does not capture CUDA graphs. Run the code eagerly, or "
        "compile it with shardflow.compile (a traced graph replayed without Python overhead; "
        "docs/KERNELS.md).")


class CUDAGraph:
    """Refused (see the module docstring)."""

    def __init__(self, keep_graph: bool = False):
        _refuse("CUDAGraph()")


class graph:
    """``with torch.cuda.graph(g):`` capture; refused (see the module docstring)."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global",
                 enable_annotations: bool = False, check_input_liveness: bool = False):
        _refuse("graph()")


def graph_pool_handle():
    """Refused (see the module docstring)."""
    _refuse("graph_pool_handle()")


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool=None):
    """The callables (a tuple of them, or one) unchanged: they compute what graphed ones would."""
    return callables


def is_current_stream_capturing() -> bool:
    """False: shardflow never captures a CUDA graph."""
    return False
