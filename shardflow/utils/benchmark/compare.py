"""``Compare``: measurements as tables, torch's layout (``torch.utils.benchmark.Compare``).

One table per ``label``. Rows are ``(num_threads, env, sub_label or stmt)`` (a "N threads:"
separator line where the thread count changes; when the measurements come from more than
one ``env``, the first row of each env is prefixed ``(env)``, as torch's A/B tables), columns
are ``description``\\ s, and each cell is the median in one unit for the whole table. Equal
tasks are merged first (their raw times pooled). Each column prints its numbers with one
decimal, or, after ``trim_significant_figures()``, with as many as the measurements'
``significant_figures`` support; ``colorize()`` marks each column's (``rowwise=True``: each
row's) best time in bold green and the slower ones in blue / dim red / red with torch's ANSI
codes and thresholds; ``highlight_warnings()`` adds ``(! XX%)`` to noisy cells.
"""

from __future__ import annotations

import enum
import math

from .common import Measurement, select_unit, trim_sigfig, unit_to_english

__all__ = ["Compare", "Colorize"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _color(text: str, value: float, best: float) -> str:
    """torch's shades: within 1% (or 100 ns) of the best, within 10%, 2x, 5x slower."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + text + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + text + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + text + TERMINATE * 2
    if value >= best * 2:
        return BAD + text + TERMINATE * 2
    return text


class _Column:
    """How one column prints its numbers: a width and a number of decimals shared by its cells."""

    def __init__(self, results: list, scale: float, trim: bool, highlight: bool):
        present = [r for r in results if r is not None]
        self.trim = trim
        self.highlight = highlight and any(r.has_warnings for r in present)
        leading = [int(math.ceil(math.log10(r.median / scale))) for r in present]
        unit_digits = max(leading)
        decimals = min(max(r.significant_figures - d, 0) for d, r in zip(leading, present)) if trim else 1
        length = unit_digits + decimals + (1 if decimals else 0)
        self.template = f"{{:>{length}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def cell(self, value: float | None, sigfigs: int, spread: float | None) -> str:
        if value is None:
            return " " * len(self.cell(1, sigfigs, None))
        if self.trim:
            value = trim_sigfig(value, sigfigs)
        return self.template.format(value, f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else "")


class _Table:
    def __init__(self, results: list[Measurement], colorize: Colorize, trim: bool, highlight: bool):
        self.results, self.colorize, self.highlight = results, colorize, highlight
        self.label = results[0].label
        self.unit, self.scale = select_unit(min(r.median for r in results))
        row_keys = list(dict.fromkeys((r.num_threads, r.env, r.as_row_name) for r in results))
        row_keys.sort(key=lambda k: k[:2])  # by threads then env; statement order kept
        col_keys = list(dict.fromkeys(r.description for r in results))
        grid = {k: [None] * len(col_keys) for k in row_keys}
        for r in results:
            grid[(r.num_threads, r.env, r.as_row_name)][col_keys.index(r.description)] = r
        self.row_keys, self.col_keys, self.grid = row_keys, col_keys, grid
        envs = {r.env for r in results}
        self.render_env = len(envs) > 1
        self.env_len = max(len(e) for e in envs) if self.render_env else 0
        # row groups: one per thread count; columns size their numbers per table
        self.columns = [_Column([grid[k][j] for k in row_keys], self.scale, trim, highlight)
                        for j in range(len(col_keys))]

    def render(self) -> str:
        strings, meta = [["", *[str(c) if c is not None else "None" for c in self.col_keys]]], []
        prior_threads, prior_env = None, ""
        for key in self.row_keys:
            threads, env, name = key
            new_group = threads != prior_threads
            if new_group:
                prior_threads, prior_env = threads, ""
            show_env = self.render_env and env != prior_env
            prior_env = env
            prefix = (f"({env})" if show_env else "").ljust(self.env_len + 4)
            row = ["  " + prefix + name]
            for m, col in zip(self.grid[key], self.columns):
                row.append(col.cell(None, 1, None) if m is None else col.cell(
                    m.median / self.scale, m.significant_figures, m.iqr / m.median if m.has_warnings else None))
            strings.append(row)
            meta.append((key, threads if new_group else None))
        widths = [max(len(row[i]) for row in strings) for i in range(len(strings[0]))]
        lines = ["  |  ".join(c.center(w) for c, w in zip(strings[0], widths))]
        total = len(lines[0])
        for row, (key, threads) in zip(strings[1:], meta):
            if threads is not None:
                lines.append(f"{threads} threads: ".ljust(total, "-"))
            lines.append("  |  ".join(self._finish(row, widths, key)))
        warned = self.highlight and any(r.has_warnings for r in self.results)
        title = (" " + (self.label or "") + " ").center(total - 2, "-")
        return (f"[{title}]\n" + "\n".join(lines) + f"\n\nTimes are in {unit_to_english(self.unit)}s ({self.unit}).\n"
                + ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if warned else ""))

    def _finish(self, row, widths, key):
        results = self.grid[key]
        if self.colorize == Colorize.ROWWISE:
            best = [min(r.median for r in results if r is not None)] * len(results)
        elif self.colorize == Colorize.COLUMNWISE:
            group = [k for k in self.row_keys if k[0] == key[0]]  # the rows of this thread count
            best = []
            for j in range(len(results)):
                medians = [self.grid[k][j].median for k in group if self.grid[k][j] is not None]
                best.append(min(medians) if medians else None)
        else:
            best = [None] * len(results)
        out = [row[0].ljust(widths[0])]
        for text, width, m, b in zip(row[1:], widths[1:], results, best):
            text = text.center(width)
            if m is not None and b is not None:
                text = _color(text, m.median, b)
            out.append(text)
        return out


class Compare:
    """Print many measurements as tables (module docstring)."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def __str__(self) -> str:
        merged = Measurement.merge(self._results)
        labels = dict.fromkeys(r.label for r in merged)
        return "\n".join(_Table([r for r in merged if r.label == lb], self._colorize,
                                self._trim_significant_figures, self._highlight_warnings).render()
                         for lb in labels)

    def print(self) -> None:
        print(str(self))
