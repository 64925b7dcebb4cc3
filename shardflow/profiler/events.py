"""Events and their averages, with PyTorch's names: ``FunctionEvent``, ``FunctionEventAvg``,
``EventList.table()``.

Times are in microseconds (``cpu_time_total``, ``self_cpu_time_total``), as in PyTorch.
``key_averages()`` groups events by name (and input shapes with
``group_by_input_shape=True``, and the first ``group_by_stack_n`` frames of the calling
Python stack with ``with_stack``); the steps of a schedule (``ProfilerStep#N``) average
under one key, ``ProfilerStep*``, as in PyTorch. ``table(sort_by=..., row_limit=...)``
prints PyTorch's columns (Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
then CPU Mem and Self CPU Mem when memory was profiled, # of Calls, then Input Shapes when
grouped by shape and Source Location when grouped by stack), and a ``Total MB`` column when
communication events carry bytes. ``sort_by`` takes PyTorch's keys (``cpu_time_total``,
``self_cpu_memory_usage`` ...; the device ones, ``cuda_time_total``, read the CPU times).
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

    @property
    def cpu_memory_usage(self) -> int:
        return int((self.args or {}).get("cpu_mem", 0))

    @property
    def self_cpu_memory_usage(self) -> int:
        return int((self.args or {}).get("self_cpu_mem", 0))

    @property
    def stack(self) -> list:
        return (self.args or {}).get("stack", [])


def format_memory(nbytes: int) -> str:
    """PyTorch's memory cells (``_format_memory``): B, KB, MB, GB in powers of 1024."""
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _trim_path(path: str, width: int) -> str:
    """torch's ``trim_path``: a source location longer than ``width`` keeps its end, its
    first three characters replaced by ``...``."""
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


@dataclass
class FunctionEventAvg:
    key: str
    cat: str = ""
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    bytes: int = 0
    input_shapes: list = field(default_factory=list)
    cpu_memory_usage: int = 0
    self_cpu_memory_usage: int = 0
    stack: list = field(default_factory=list)

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
        self.cpu_memory_usage += ev.cpu_memory_usage
        self.self_cpu_memory_usage += ev.self_cpu_memory_usage


_SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "self_cpu_time", "count",
              "bytes", "cpu_memory_usage", "self_cpu_memory_usage")


class EventList(list):
    """A list of events with PyTorch's ``key_averages()`` and ``table()``."""

    _by_shape = False
    _stack_n = 0

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        if group_by_overload_name:
            raise NotImplementedError("key_averages(group_by_overload_name=True): shardflow's ops "
                                      "have no overloads; leave it False")
        groups: dict = {}
        for ev in self:
            shapes = ev.input_shapes if group_by_input_shape else []
            stack = ev.stack[:group_by_stack_n] if group_by_stack_n > 0 else []
            name = "ProfilerStep*" if ev.cat == "step" else ev.name  # torch's one key for steps
            k = (name, str(shapes), tuple(stack))
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = FunctionEventAvg(name, ev.cat, input_shapes=shapes, stack=stack)
            avg.add(ev)
        out = EventList(groups.values())
        out._by_shape, out._stack_n = group_by_input_shape, group_by_stack_n
        return out

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header: str | None = None, top_level_events_only: bool = False,
              time_unit: str | None = None) -> str:
        if top_level_events_only or time_unit is not None:
            raise NotImplementedError("table(top_level_events_only=, time_unit=) are not supported "
                                      "by shardflow's profiler; leave them at their defaults")
        grouped = bool(self) and isinstance(self[0], FunctionEventAvg)
        source = self if grouped else self.key_averages()
        rows = source
        if sort_by is not None:
            key = sort_by.replace("cuda", "cpu").replace("device", "cpu")
            if key not in _SORT_KEYS:
                raise ValueError(f"table(sort_by={sort_by!r}): expected one of "
                                 f"{', '.join(_SORT_KEYS)}")
            rows = sorted(rows, key=lambda r: getattr(r, key), reverse=True)
        rows = list(rows)[:row_limit] if row_limit and row_limit > 0 else list(rows)
        self_total = source.self_cpu_time_total
        with_bytes = any(r.bytes for r in rows)
        with_mem = any(r.cpu_memory_usage > 0 for r in source)  # torch's test, on every row
        by_shape = self._by_shape
        stack_n = self._stack_n if any(r.stack for r in source) else 0  # torch: only with stacks
        # torch's widths: the longest entry over every event (before ``row_limit``) plus 4
        name_w = min(max(len(r.key) for r in source) + 4, max_name_column_width) if source else 4
        cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if with_mem:
            cols += ["CPU Mem", "Self CPU Mem"]
        cols.append("# of Calls")
        if with_bytes:
            cols.append("Total MB")
        widths = [12] * len(cols)
        if by_shape:
            shapes_w = min(max(len(str(r.input_shapes)) for r in source) + 4, max_shapes_column_width)
            cols.append("Input Shapes")
            widths.append(shapes_w)
        if stack_n > 0:
            src_w = min(max(len(f) for r in source for f in r.stack) + 4, max_src_column_width)
            cols.append("Source Location")
            widths.append(src_w)
        sep = "-" * name_w + "  " + "  ".join("-" * w for w in widths) + "  "
        lines = [header] if header else []
        lines += [sep, f"{'Name':>{name_w}}  " + "  ".join(
            (f"{c:<{w}}" if c == "Source Location" else f"{c:>{w}}") for c, w in zip(cols, widths)) + "  ", sep]
        pct = (lambda v: f"{100 * v / self_total:.2f}%") if self_total else (lambda v: "-")
        for r in rows:
            # torch cuts at max_name_column_width - 3 and adds "..." (a row can be wider)
            cut = max_name_column_width - 3
            name = r.key if len(r.key) < cut else r.key[:cut] + "..."
            cells = [pct(r.self_cpu_time_total), format_time(r.self_cpu_time_total),
                     pct(r.cpu_time_total), format_time(r.cpu_time_total), format_time(r.cpu_time)]
            if with_mem:
                cells += [format_memory(r.cpu_memory_usage), format_memory(r.self_cpu_memory_usage)]
            cells.append(str(r.count))
            if with_bytes:
                cells.append(f"{r.bytes / 2**20:.3f}" if r.bytes else "")
            if by_shape:
                shapes = str(r.input_shapes)
                cells.append(shapes[:shapes_w])  # torch's cut, no "..."
            row = f"{name:>{name_w}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths)) + "  "
            if stack_n > 0:  # torch: the first frame on the row, the others on lines below it
                frames = [_trim_path(f, src_w) for f in r.stack] or [""]
                lines.append(row + f"{frames[0]:<{src_w}}  ")
                blank = " " * (len(row))
                lines += [blank + f"{f:<{src_w}}  " for f in frames[1:]]
                lines.append(blank + " " * src_w + "  ")  # torch's row of empty cells
                continue
            lines.append(row)
        lines += [sep, f"Self CPU time total: {format_time(self_total)}", ""]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()
