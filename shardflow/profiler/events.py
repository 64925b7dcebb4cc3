"""Events and their averages, with PyTorch's names: ``FunctionEvent``, ``FunctionEventAvg``,
``EventList.table()``.

Times are in microseconds (``cpu_time_total``, ``self_cpu_time_total``), as in PyTorch.
``key_averages()`` groups events by name (and input shapes with
``group_by_input_shape=True``); ``table(sort_by=..., row_limit=...)`` prints PyTorch's
columns (Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls) and a
``Total MB`` column when communication events carry bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


@dataclass
class FunctionEvent:
    name: str
    cat: str
    thread: int
    start_us: float  # wall clock (µs since the epoch)
    cpu_time_total: float  # µs
    self_cpu_time_total: float  # µs
    args: dict | None = None

    @property
    def key(self) -> str:
        return self.name

    @property
    def input_shapes(self):
        return (self.args or {}).get("Input Dims", [])

    @property
    def bytes(self) -> int:
        return int((self.args or {}).get("bytes", 0))


@dataclass
class FunctionEventAvg:
    key: str
    cat: str = ""
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    bytes: int = 0
    input_shapes: list = field(default_factory=list)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def self_cpu_time(self) -> float:
        return self.self_cpu_time_total / self.count if self.count else 0.0

    def add(self, ev: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.bytes += ev.bytes


_SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "self_cpu_time", "count",
              "bytes")


class EventList(list):
    """A list of events with PyTorch's ``key_averages()`` and ``table()``."""

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        groups: dict = {}
        for ev in self:
            shapes = ev.input_shapes if group_by_input_shape else []
            k = (ev.name, str(shapes))
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = FunctionEventAvg(ev.name, ev.cat, input_shapes=shapes)
            avg.add(ev)
        return EventList(groups.values())

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width=55,
              header: str | None = None, **_ignored) -> str:
        rows = self if self and isinstance(self[0], FunctionEventAvg) else self.key_averages()
        if sort_by is not None:
            key = sort_by.replace("cuda", "cpu").replace("device", "cpu")
            if key not in _SORT_KEYS:
                raise ValueError(f"table(sort_by={sort_by!r}): expected one of "
                                 f"{', '.join(_SORT_KEYS)}")
            rows = sorted(rows, key=lambda r: getattr(r, key), reverse=True)
        rows = list(rows)[:row_limit] if row_limit and row_limit > 0 else list(rows)
        self_total = sum(r.self_cpu_time_total for r in self.key_averages()) if not (
            self and isinstance(self[0], FunctionEventAvg)) else self.self_cpu_time_total
        with_bytes = any(r.bytes for r in rows)
        name_w = min(max([len("Name")] + [len(r.key) for r in rows]) + 2, max_name_column_width)
        cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        if with_bytes:
            cols.append("Total MB")
        sep = "-" * name_w + "  " + "  ".join("-" * 12 for _ in cols) + "  "
        lines = [header] if header else []
        lines += [sep, f"{'Name':>{name_w}}  " + "  ".join(f"{c:>12}" for c in cols) + "  ", sep]
        pct = (lambda v: f"{100 * v / self_total:.2f}%") if self_total else (lambda v: "-")
        for r in rows:
            name = r.key if len(r.key) <= name_w else r.key[:name_w - 3] + "..."
            cells = [pct(r.self_cpu_time_total), format_time(r.self_cpu_time_total),
                     pct(r.cpu_time_total), format_time(r.cpu_time_total),
                     format_time(r.cpu_time), str(r.count)]
            if with_bytes:
                cells.append(f"{r.bytes / 2**20:.3f}" if r.bytes else "")
            lines.append(f"{name:>{name_w}}  " + "  ".join(f"{c:>12}" for c in cells) + "  ")
        lines += [sep, f"Self CPU time total: {format_time(self_total)}", ""]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()
