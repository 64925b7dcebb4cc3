"""Chrome-trace files (``chrome://tracing``, Perfetto): write, merge ranks, summarise steps.

One trace is ``{"traceEvents": [...]}`` of complete events (``"ph": "X"``, ``ts``/``dur``
in wall-clock microseconds, ``pid`` = rank, ``tid`` = thread, ``cat`` = op / comm / wait /
data / user / step, ``args`` with ``bytes`` for communication).

:func:`merge` puts the per-rank files of one job into one trace (one process row per rank;
ranks on one host share the wall clock, so the rows line up).

:func:`step_summary` splits each step (``ProfilerStep#N`` events, else the whole trace)
of each rank into

* ``comm``: time inside blocking collectives and send/recv, and blocked in ``wait`` on an
  async handle (top-level, not nested in another such event), minus the part spent
  waiting for the peers (below): communication the rank did not hide;
* ``idle``: time a rank waited for the others: in a blocking collective, the time from its
  entry until the last rank entered the same collective; in a ``wait``, the time until the
  last rank *issued* that async collective (collectives matched across ranks by op, group
  and sequence number; this compares clocks, exact on one host). Without a match (one
  rank's trace, send/recv) the time counts as ``comm``;
* ``data``: time in the DataLoader;
* ``compute``: the rest of the step (ops, backward, optimizer, Python).

That is the explanation of a low speedup: compute shrinks with more ranks, ``comm`` grows
with the bytes, ``idle`` shows imbalance (a slow rank, a straggler).
"""

from __future__ import annotations

import json
from collections import defaultdict


def trace_events(events, rank: int = 0) -> list[dict]:
    """Chrome complete events of ``FunctionEvent`` s for process ``rank``."""
    out = [{"name": "process_name", "ph": "M", "pid": rank, "tid": 0,
            "args": {"name": f"rank {rank}"}}]
    for ev in events:
        d = {"name": ev.name, "cat": ev.cat, "ph": "X", "pid": rank, "tid": ev.thread % 100000,
             "ts": round(ev.start_us, 3), "dur": round(ev.cpu_time_total, 3)}
        if ev.args:
            d["args"] = ev.args
        out.append(d)
    return out


def write(path: str, events) -> None:
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


def merge(paths: list[str], out_path: str) -> dict:
    """Merge per-rank trace files into ``out_path``; returns the merged document with its
    ``stepSummary`` (see :func:`step_summary`)."""
    events = []
    for p in paths:
        with open(p) as f:
            events.extend(json.load(f)["traceEvents"])
    doc = {"traceEvents": events, "displayTimeUnit": "ms", "stepSummary": step_summary(events)}
    with open(out_path, "w") as f:
        json.dump(doc, f)
    return doc


def _top_level(spans):
    """Spans (start, end, ...) not nested in an earlier one of the same list."""
    out, end = [], -1.0
    for s in sorted(spans, key=lambda s: (s[0], -s[1])):
        if s[0] >= end:
            out.append(s)
            end = s[1]
    return out


def step_summary(events: list[dict]) -> list[dict]:
    """Per rank and step: wall, compute, comm, idle, data (ms) and bytes (see the module
    docstring)."""
    by_rank = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            by_rank[e["pid"]].append(e)
    # entry time of each collective per rank, to find who waited for whom
    # (an async one: its issue, which the matching wait follows)
    entries = defaultdict(dict)
    for rank, evs in by_rank.items():
        for e in evs:
            a = e.get("args") or {}
            if e["cat"] == "comm" and "seq" in a:
                kind = "issue" if a.get("async_op") else "entry"
                entries[(kind, e["name"], a.get("group", 0), a["seq"])][rank] = e["ts"]
    last_entry = {k: max(v.values()) for k, v in entries.items() if len(v) > 1}
    rows = []
    for rank in sorted(by_rank):
        evs = by_rank[rank]
        steps = [e for e in evs if e["cat"] == "step"]
        if not steps:
            t0 = min(e["ts"] for e in evs)
            t1 = max(e["ts"] + e["dur"] for e in evs)
            steps = [{"name": "whole trace", "ts": t0, "dur": t1 - t0}]
        comm = _top_level([(e["ts"], e["ts"] + e["dur"], e) for e in evs
                           if e["cat"] in ("comm", "wait")])
        data = _top_level([(e["ts"], e["ts"] + e["dur"], e) for e in evs if e["cat"] == "data"])
        for st in steps:
            lo, hi = st["ts"], st["ts"] + st["dur"]
            c_ms = i_ms = d_ms = 0.0
            nbytes = 0
            for s, e_, ev in comm:
                if s < lo or s >= hi:
                    continue
                dur = min(e_, hi) - s
                a = ev.get("args") or {}
                if ev["cat"] == "wait":
                    key = ("issue", ev["name"].removeprefix("wait "), a.get("group", 0),
                           a.get("seq"))
                else:
                    nbytes += int(a.get("bytes", 0))
                    key = ("entry", ev["name"], a.get("group", 0), a.get("seq"))
                waited = min(max(0.0, last_entry.get(key, s) - s), dur)
                i_ms += waited
                c_ms += dur - waited
            for s, e_, _ in data:
                if lo <= s < hi:
                    d_ms += min(e_, hi) - s
            wall = hi - lo
            rows.append({"rank": rank, "step": st["name"], "wall_ms": wall / 1e3,
                         "compute_ms": max(0.0, wall - c_ms - i_ms - d_ms) / 1e3,
                         "comm_ms": c_ms / 1e3, "idle_ms": i_ms / 1e3, "data_ms": d_ms / 1e3,
                         "comm_bytes": nbytes})
    return rows


def format_summary(rows: list[dict]) -> str:
    """The step summary as a text table (ms and % of the step)."""
    head = (f"{'rank':>4}  {'step':<18} {'wall ms':>9} {'compute':>15} {'comm':>15} "
            f"{'idle':>15} {'data':>15} {'comm MB':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        w = r["wall_ms"] or 1.0

        def cell(v, w=w):
            return f"{v:8.1f} ({100 * v / w:3.0f}%)"

        lines.append(f"{r['rank']:>4}  {r['step'][:18]:<18} {r['wall_ms']:9.1f} "
                     f"{cell(r['compute_ms'])} {cell(r['comm_ms'])} {cell(r['idle_ms'])} "
                     f"{cell(r['data_ms'])} {r['comm_bytes'] / 2**20:8.2f}")
    return "\n".join(lines)
