"""The recorder: timed, nested events from the hooks, kept in memory until export.

An event is ``(name, cat, tid, start_ns, dur_ns, self_ns, args)`` with
``time.perf_counter_ns`` times. Categories: ``op`` (a registered op, from the dispatch
hook), ``comm`` (a collective or send/recv, with its bytes), ``wait`` (blocked in
``Work.wait``), ``data`` (``DataLoader`` producing a batch), ``user`` (``record_function``),
``step`` (``ProfilerStep#N``). Events nest per thread: each open event keeps the time of
its finished children, so ``self_ns`` (time not in a child) is exact, as PyTorch's "Self
CPU" column. ``wall_anchor`` maps perf-counter nanoseconds to wall-clock microseconds
so the traces of ranks on one host line up in a merged timeline.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager


class Recorder:
    def __init__(self, record_shapes: bool = False, parent: Recorder | None = None):
        self.events: list[tuple] = []
        self.record_shapes = record_shapes
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
        frame = [time.perf_counter_ns(), 0, tid]
        stack.append(frame)
        return frame

    def end(self, frame: list, name: str, cat: str, args) -> None:
        t1 = time.perf_counter_ns()
        start, child, tid = frame
        dur = t1 - start
        stack = self._stacks[tid]
        if stack and stack[-1] is frame:
            stack.pop()
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
        try:
            return func(*args, **kwargs)
        finally:
            meta = None
            if self.record_shapes:
                meta = {"Input Dims": [list(getattr(a, "shape", ())) for a in args]}
            self.end(frame, name, "op", meta)

    def wrap_loader(self, iterator, name: str = "DataLoader"):
        return _TimedIter(iterator, self, f"enumerate({name})#{type(iterator).__name__}.__next__")


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
