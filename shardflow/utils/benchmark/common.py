"""``Measurement``: the raw block times of one timed statement and their statistics."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "trim_sigfig", "unit_to_english"]

_UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels ``Compare`` groups by."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + "\n".join(
            "  " + line for line in self.stmt.splitlines())


def select_unit(t: float) -> tuple[str, float]:
    """The time unit (``ns``, ``us``, ``ms``, ``s``) to print ``t`` seconds in, and its scale."""
    unit, scale = _UNITS[0]
    for u, s in _UNITS:
        if t >= s:
            unit, scale = u, s
    return unit, scale


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures."""
    if x == 0:
        return 0.0
    magnitude = int(math.floor(math.log10(abs(x))))
    return round(x, n - magnitude - 1)


class Measurement:
    """``raw_times[i]`` seconds for ``number_per_run`` runs of the statement; ``times`` are per
    run. ``median``/``mean``/``iqr`` are over ``times`` (the median of a single block is that
    block's time per run, as in torch)."""

    def __init__(self, number_per_run: int, raw_times: list[float], task_spec: TaskSpec, metadata=None) -> None:
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name: str):
        if name in ("stmt", "setup", "global_setup", "label", "sub_label", "description", "env", "num_threads",
                    "title"):
            return getattr(self.__dict__["task_spec"], name)
        raise AttributeError(f"'Measurement' object has no attribute {name!r}")

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def mean(self) -> float:
        return float(np.mean(self.times))

    @property
    def iqr(self) -> float:
        q = np.quantile(self.times, [0.25, 0.75])
        return float(q[1] - q[0])

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread supports (torch's rule: 1-4)."""
        if len(self.times) < 2 or self.median == 0:
            return 4
        n = len(self.times)
        interval = 1.645 * (self.iqr / 1.349) / math.sqrt(n)  # a 90% interval of the median's estimate
        if interval == 0:
            return 4
        return int(min(max(math.floor(math.log10(self.median / interval)), 1), 4))

    @property
    def has_warnings(self) -> bool:
        return len(self.times) > 1 and self.median > 0 and self.iqr / self.median > 0.1

    def meets_confidence(self, threshold: float = 0.1) -> bool:
        return self.median > 0 and self.iqr / self.median < threshold

    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    @staticmethod
    def merge(measurements) -> list[Measurement]:
        """One measurement per task: the raw per-run times of equal tasks pooled."""
        grouped: dict[TaskSpec, list[Measurement]] = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).append(m)
        return [Measurement(1, [t for m in ms for t in m.times], spec) for spec, ms in grouped.items()]

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        lines = [f"<{type(self).__module__}.Measurement object at {hex(id(self))}>", self.title]
        if self.description:
            lines.append(self.description)
        if self.setup and self.setup != "pass":
            lines.append(f"setup: {self.setup}")
        if len(self.times) > 1:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit}")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        n = len(self.times)
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs per measurement, "
                     f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}")
        return "\n".join(lines)
