"""``Measurement``: the raw block times of one timed statement and their statistics."""

from __future__ import annotations

import dataclasses
import math
import textwrap

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
    """``x`` kept to ``n`` significant figures (torch's rule: the magnitude is the ceiling of
    ``log10|x|``, the scaled value rounded half to even; ``3.14159, 2 -> 3.1``)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    if x == 0:
        return 0.0
    magnitude = int(math.ceil(math.log10(abs(x))))
    scale = 10.0 ** (magnitude - n)
    return float(np.round(x / scale) * scale)


_MIN_CONFIDENCE_INTERVAL = 25e-9  # torch's floor: 25 ns
_MAX_SIGNIFICANT_FIGURES = 4


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
        """How many figures of the median the spread supports (torch's rough estimate: a 90%
        interval from the standard deviation of the middle half of the sorted times, at least
        25 ns; 1 to 4 figures)."""
        times = sorted(self.times)
        n = len(times)
        middle = times[n // 4:int(math.ceil(3 * n / 4))]
        std = float(np.std(middle)) if middle else 0.0
        interval = max(1.645 * std / math.sqrt(max(len(middle), 1)), _MIN_CONFIDENCE_INTERVAL)
        figures = int(math.floor(math.log10(self.median / interval))) if self.median > 0 else 1
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        return len(self.times) > 1 and self.median > 0 and self.iqr / self.median > 0.1

    def meets_confidence(self, threshold: float = 0.1) -> bool:
        return self.median > 0 and self.iqr / self.median < threshold

    @property
    def as_row_name(self) -> str:
        """The row ``Compare`` puts this measurement in (a property, as torch's)."""
        return self.sub_label or self.stmt or "[Unknown]"

    @staticmethod
    def merge(measurements) -> list[Measurement]:
        """One measurement per task: the raw per-run times of equal tasks pooled."""
        grouped: dict[TaskSpec, list[Measurement]] = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).append(m)
        return [Measurement(1, [t for m in ms for t in m.times], spec) for spec, ms in grouped.items()]

    def __repr__(self) -> str:
        """torch's layout, line for line: "Median: " and the IQR line (with its quartiles) only
        when there are enough measurements for them (more than one; four or more), the
        "runs per measurement," wording only for several measurements ("1 runs , 1 thread"
        for one, as torch prints it), and torch's IQR warning (25% or more: "significant
        environmental influence"; 10% or more: "system fluctuation")."""
        unit, scale = select_unit(self.median)
        times = self.times
        n = len(times)
        lines = [f"<{type(self).__module__}.Measurement object at {hex(id(self))}>"]
        setup = self.setup
        setup_str = ("" if setup == "pass" or not setup
                     else "setup:\n" + textwrap.indent(setup, "  ") if "\n" in setup else f"setup: {setup}")
        lines += [f"{s}\n" if "\n" in s else s for s in (self.title, self.description or "", setup_str) if s]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}")
        if n >= 4:
            p25, p75 = np.quantile(times, [0.25, 0.75])
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25 / scale:.2f} to {p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {self.num_threads} thread{'s' if self.num_threads > 1 else ''}")
        if self.median > 0 and self.iqr / self.median >= 0.1:
            why = ("This suggests significant environmental influence." if self.iqr / self.median >= 0.25
                   else "This could indicate system fluctuation.")
            lines.append(f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% "
                         f"of the median measurement.\n           {why}")
        return "\n".join("\n".join(lines).strip().splitlines())
