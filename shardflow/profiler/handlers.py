"""``torch.profiler``'s module-level helpers: ``tensorboard_trace_handler``,
``supported_activities``, ``kineto_available``, and ``ExecutionTraceObserver`` (refused).

``tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False)`` is PyTorch's: an
``on_trace_ready`` callback that writes each finished recording window as
``<dir_name>/<worker_name>.<time_ns>.pt.trace.json`` (``.gz`` with ``use_gzip``; ``worker_name``
defaults to ``<hostname>_<pid>``), the Chrome trace ``prof.export_chrome_trace`` writes, which
TensorBoard's profiler plugin and ``chrome://tracing`` read.
"""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import time

from ..backend.xp import cuda_is_available
from .schedule import ProfilerActivity

__all__ = ["tensorboard_trace_handler", "supported_activities", "kineto_available",
           "ExecutionTraceObserver"]


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False):
    """An ``on_trace_ready`` handler writing one trace file per call into ``dir_name``."""

    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker_name}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)

    return handler_fn


def supported_activities() -> set:
    """``{ProfilerActivity.CPU}``, plus ``CUDA`` when a CUDA device is visible."""
    acts = {ProfilerActivity.CPU}
    if cuda_is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def kineto_available() -> bool:
    """False: shardflow's profiler is its own recorder, not Kineto."""
    return False


class ExecutionTraceObserver:
    """PyTorch's execution-graph observer (a JSON of every operator with its inputs, for
    replay tools); refused on construction."""

    def __init__(self):
        raise NotImplementedError(
            "shardflow.profiler.ExecutionTraceObserver: shardflow records no execution graph for "
            "replay tools. Use shardflow.profiler.profile(...) and prof.export_chrome_trace(path) "
            "for a timeline, or prof.key_averages().table() for per-op totals.")
