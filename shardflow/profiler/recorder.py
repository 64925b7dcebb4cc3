"""The recorder: timed, nested events from the hooks, kept in memory until export.

An event is ``(name, cat, tid, start_ns, dur_ns, self_ns, args)`` with
``time.perf_counter_ns`` times. Categories: ``op`` (a registered op, from the dispatch
hook), ``comm`` (a collective or send/recv, with its bytes), ``wait`` (blocked in
``Work.wait``), ``data`` (``DataLoader`` producing a batch), ``user`` (``record_function``),
``step`` (``ProfilerStep#N``). Events nest per thread: each open event keeps the time of
its finished children, so ``self_ns`` (time not in a child) is exact, as PyTorch's "Self
CPU" column. ``wall_anchor`` maps perf-counter nanoseconds to wall-clock microseconds
so the traces of ranks on one host line up in a merged timeline.

Op events are named ``aten::<op>`` (``aten::conv2d``, ``aten::mm``), the names torch's
profiler gives the same calls, so a program that looks rows up by name finds them (torch
also lists the aten ops its op calls inside, ``aten::convolution`` ...; shardflow's ops
have no such inner calls, so those rows are absent).

With ``profile_memory`` every op event also carries ``self_cpu_mem`` (the bytes of the
arrays the op returned whose memory is not an input's: a view allocates nothing) and ``cpu_mem``
(that plus its children's), torch's "Self CPU Mem" / "CPU Mem" columns. Unlike torch,
frees and an op's temporary buffers are not seen (torch's ``[memory]`` row of frees is
absent; its numbers may be larger where an op allocates scratch space). With
``with_stack`` every op event carries the Python stack that called it (``stack``:
``"file(line): function"`` entries, innermost first, the dispatcher's and profiler's own
frames left out), as torch's ``Source Location``.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager


class Recorder:
    def __init__(self, record_shapes: bool = False, parent: Recorder | None = None,
                 profile_memory: bool = False, with_stack: bool = False):
        self.events: list[tuple] = []
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.parent = parent  # an outer recorder that sees the same events (nested profiles)
        self._stacks: dict[int, list] = {}
        self.perf0 = time.perf_counter_ns()
        self.wall0_us = time.time_ns() / 1000.0

    def wall_us(self, perf_ns: int) -> float:
        return self.wall0_us + (perf_ns - self.perf0) / 1000.0

    # -- the two primitives ---------------------------------------------------------------
    def begin(self) -> list:
        tid = threading.get_ident()
        stack = self._stacks.get(tid)
        if stack is None:
            stack = self._stacks[tid] = []
        frame = [time.perf_counter_ns(), 0, tid, 0]  # start, children's ns, thread, children's bytes
        stack.append(frame)
        return frame

    def end(self, frame: list, name: str, cat: str, args, self_mem: int = 0) -> None:
        t1 = time.perf_counter_ns()
        start, child, tid, child_mem = frame
        dur = t1 - start
        stack = self._stacks[tid]
        if stack and stack[-1] is frame:
            stack.pop()
        if self.profile_memory:
            args = {**(args or {}), "cpu_mem": self_mem + child_mem, "self_cpu_mem": self_mem}
            if stack:
                stack[-1][3] += self_mem + child_mem
        if stack:
            stack[-1][1] += dur
        self.events.append((name, cat, tid, start, dur, dur - child, args))
        if self.parent is not None:
            self.parent._adopt(frame, name, cat, args, dur)

    def _adopt(self, frame, name, cat, args, dur) -> None:
        """An event recorded by a nested profile: keep it here too (own nesting)."""
        stack = self._stacks.get(frame[2]) or []
        if stack:
            stack[-1][1] += dur
            if args and "cpu_mem" in args:
                stack[-1][3] += args["cpu_mem"]
        self.events.append((name, cat, frame[2], frame[0], dur, dur - frame[1], args))
        if self.parent is not None:
            self.parent._adopt(frame, name, cat, args, dur)

    # -- what the hooks call --------------------------------------------------------------
    @contextmanager
    def span(self, name: str, cat: str = "user", **args):
        frame = self.begin()
        try:
            yield
        finally:
            self.end(frame, name, cat, args or None)

    def op(self, name, func, args, kwargs):
        """The dispatch hook: time one op call (input shapes with ``record_shapes``)."""
        frame = self.begin()
        out = None
        try:
            out = func(*args, **kwargs)
            return out
        finally:
            meta = None
            if self.record_shapes:
                meta = {"Input Dims": [list(getattr(a, "shape", ())) for a in args]}
            if self.with_stack:
                meta = {**(meta or {}), "stack": _python_stack()}
            self.end(frame, f"aten::{name}", "op", meta,
                     _allocated_bytes(out, args) if self.profile_memory else 0)

    def wrap_loader(self, iterator, name: str = "DataLoader"):
        return _TimedIter(iterator, self, f"enumerate({name})#{type(iterator).__name__}.__next__")


_OWN_FILES = ("profiler/recorder.py", "autograd/dispatch.py", "contextlib.py")


def _python_stack() -> list[str]:
    """The calling Python frames, innermost first, as torch's ``Source Location`` writes
    them (``"path(line): function"``), the recording machinery's own frames left out."""
    out, f = [], sys._getframe(2)
    while f is not None:
        path = f.f_code.co_filename.replace("\\", "/")
        if not path.endswith(_OWN_FILES):
            out.append(f"{path}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _root(arr):
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


def _arrays(value):
    if isinstance(value, tuple | list):
        for v in value:
            yield from _arrays(v)
        return
    arr = getattr(value, "array", None)
    if arr is not None:
        yield arr


def _allocated_bytes(out, args) -> int:
    """The bytes an op's result allocated: its arrays whose memory is not an input's (a
    view of an input costs nothing), summed over a tuple/list result."""
    inputs = {id(_root(a)) for a in _arrays(args)}
    return sum(int(getattr(a, "nbytes", 0)) for a in _arrays(out) if id(_root(a)) not in inputs)


class _TimedIter:
    """A DataLoader iterator whose ``__next__`` is recorded as a ``data`` event."""

    def __init__(self, it, rec: Recorder, name: str):
        self._it, self._rec, self._name = it, rec, name

    def __iter__(self):
        return self

    def __next__(self):
        frame = self._rec.begin()
        try:
            return next(self._it)
        finally:
            self._rec.end(frame, self._name, "data", None)

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        return getattr(self._it, name)
