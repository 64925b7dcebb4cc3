"""``Compare``: measurements as a table, one per label: rows are sub-labels (grouped by thread
count), columns are descriptions, cells the median in one unit for the whole table."""

from __future__ import annotations

import enum

from .common import Measurement, select_unit, trim_sigfig, unit_to_english

__all__ = ["Compare", "Colorize"]


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


class Compare:
    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self._trim_significant_figures = False
        self.extend_results(results)

    def extend_results(self, results) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Accepted for torch's API; the table is printed without colour."""

    def highlight_warnings(self) -> None:
        """Accepted for torch's API."""

    def _table(self, label, results: list[Measurement]) -> str:
        columns = list(dict.fromkeys(r.description for r in results))
        threads = sorted(set(r.num_threads for r in results))
        unit, scale = select_unit(min(r.median for r in results))
        cells: dict[tuple, str] = {}
        for r in results:
            v = r.median / scale
            if self._trim_significant_figures:
                v = trim_sigfig(v, r.significant_figures)
            cells[(r.num_threads, r.as_row_name(), r.description)] = f"{v:.1f}"  # torch's one decimal
        rows = [(t, name) for t in threads for name in dict.fromkeys(r.as_row_name() for r in results
                                                                       if r.num_threads == t)]
        name_w = max(len(n) for _, n in rows) + 8
        col_w = [max(len(str(c or "")), *(len(cells.get((t, n, c), "")) for t, n in rows)) + 4 for c in columns]
        header = " " * name_w + "|" + "|".join(str(c or "").center(w) for c, w in zip(columns, col_w))
        width = len(header)
        title = f" {label} " if label else ""
        lines = [f"[{title.center(width - 2, '-')}]", header]
        for t in threads:
            lines.append(f"{t} threads: ".ljust(width, "-"))
            for tt, n in rows:
                if tt == t:
                    lines.append(f"      {n}".ljust(name_w) + "|" + "|".join(
                        cells.get((t, n, c), "").center(w) for c, w in zip(columns, col_w)))
        lines += ["", f"Times are in {unit_to_english(unit)}s ({unit}).", ""]
        return "\n".join(lines)

    def __str__(self) -> str:
        labels = dict.fromkeys(r.label for r in self._results)
        return "\n".join(self._table(lb, [r for r in self._results if r.label == lb]) for lb in labels)

    def print(self) -> None:
        print(str(self))
