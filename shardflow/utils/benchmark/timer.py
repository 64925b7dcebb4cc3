"""``Timer``: time a Python statement with ``timeit`` after running its setup.

``blocked_autorange``: torch's block size (grown 10x until the timer's own overhead is at most
1e-4 of a block and a block takes at least ``min_run_time / 1000``; see ``_block_size``),
then blocks of that size until ``min_run_time`` seconds are spent; each block is one entry of
``raw_times``.

As torch's: ``stmt`` and ``setup`` are dedented (an indented block string written inside a
function runs) and ``torch`` (here the ``shardflow`` package) is in their globals unless given.
``Language.CPP`` and ``collect_callgrind`` (torch's C++ snippets and Valgrind counts) raise.
"""

from __future__ import annotations

import enum
import sys
import textwrap
import timeit

import numpy as np

from ...kernels.threads import get_num_threads, set_num_threads
from .common import Measurement, TaskSpec

__all__ = ["Timer", "Language"]


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _dedent(code: str) -> str:
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()


class Timer:
    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer=timeit.default_timer,
                 globals: dict | None = None, label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: Language | str = Language.PYTHON) -> None:
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Timer: language={language!r} is not supported; shardflow times Python statements "
                             "only (Language.PYTHON)")
        if not isinstance(stmt, str):
            raise ValueError(f"Timer: stmt must be a string of Python code, got {type(stmt).__name__}")
        self._globals = dict(globals or {})
        # torch's convenience: ``torch`` is in the statement's globals unless given, so
        # ``Timer("torch.ones(3)")`` runs. Here it is the root package, which Python imported
        # before this module (looked up, not imported: this layer sits below the root).
        self._globals.setdefault("torch", sys.modules[__name__.split(".")[0]])
        # torch's: a snippet written as an indented block string inside a function runs (no
        # IndentationError), and its leading newline and trailing blanks go (``__repr__``).
        stmt, setup = _dedent(stmt), _dedent(setup)
        if global_setup:
            exec(global_setup, self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)

    def _timeit(self, number: int) -> float:
        previous = get_num_threads()
        set_num_threads(self._task_spec.num_threads)
        try:
            return max(self._timer.timeit(number), 1e-9)
        finally:
            set_num_threads(previous)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after a warm-up run)."""
        self._timeit(number=max(int(number // 100), 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        """torch's estimate (which is also the warm-up): grow the block 10x until the timer's
        own overhead (the median of five empty blocks) is at most 1e-4 of a block and a block
        takes at least ``min_run_time / 1000``, or one block alone exceeds ``min_run_time``."""
        previous = get_num_threads()
        set_num_threads(self._task_spec.num_threads)
        try:
            overhead = float(np.median([self._timeit(0) for _ in range(5)]))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    return number
                if taken > min_run_time or number * 10 > 2147483647:
                    return number
                number *= 10
        finally:
            set_num_threads(previous)

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of an estimated size until ``min_run_time`` seconds are spent (module docstring)."""
        number = self._block_size(min_run_time)
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._timeit(number)
            total += t
            times.append(t)
            if callback is not None:
                callback(number, t)
        return Measurement(number, times, self._task_spec)

    def collect_callgrind(self, number: int = 100, *, repeats=None, collect_baseline: bool = True,
                          retain_out_file: bool = False):
        """Not built: torch counts instructions by running the statement under Valgrind's
        Callgrind in a subprocess with its C++ bindings; shardflow has no such collector."""
        raise NotImplementedError("Timer.collect_callgrind: shardflow has no Callgrind instruction counter "
                                  "(torch runs the statement under valgrind through its C++ bindings); "
                                  "time it with Timer.blocked_autorange() / adaptive_autorange() instead")

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback=None) -> Measurement:
        """Blocks until the IQR/median of the per-run times is below ``threshold`` (after at
        least ``min_run_time`` seconds) or ``max_run_time`` seconds are spent."""
        number = self._block_size(0.05)
        times, total = [], 0.0
        while True:
            t = self._timeit(number)
            total += t
            times.append(t)
            if callback is not None:
                callback(number, t)
            m = Measurement(number, times, self._task_spec)
            if total >= min_run_time and len(times) > 3 and m.meets_confidence(threshold):
                return m
            if total >= max_run_time:
                return m
