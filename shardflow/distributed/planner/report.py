"""Text output of the planner: the ranked table, one layout's breakdown, the refusals."""

from __future__ import annotations

__all__ = ["table", "breakdown", "refusals", "mib"]


def mib(nbytes: float) -> str:
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.2f} GiB"
    return f"{nbytes / 2**20:.1f} MiB"


def table(res, top: int | None = None) -> str:
    """The ranked layouts: predicted step time, tokens/s, memory per rank, communication
    volume and its exposed share of the step, bubble, MFU."""
    tok = res.spec.tokens_per_sample > 1
    hdr = (f"{'#':>3} {'layout':<32} {'step ms':>9} {'tokens/s' if tok else 'samples/s':>10} "
           f"{'mem/rank':>10} {'comm MB':>9} {'comm %':>7} {'bubble':>7} {'MFU':>6}  fits")
    lines = [hdr, "-" * len(hdr)]
    for i, e in enumerate(res.estimates[:top] if top else res.estimates, 1):
        rate = e.tokens_per_s if tok else e.samples_per_s
        lines.append(f"{i:>3} {e.layout.describe():<32} {e.step_time * 1e3:9.2f} {rate:10.0f} "
                     f"{mib(e.memory):>10} {e.comm_bytes / 1e6:9.2f} {e.comm_share * 100:6.1f}% "
                     f"{e.bubble * 100:6.1f}% {e.mfu * 100:5.1f}%  {'yes' if e.fits else 'NO'}")
    return "\n".join(lines)


def breakdown(e) -> str:
    """One layout's terms and collectives (the communication plan it implies)."""
    mp = e.memory_parts
    lines = [f"{e.layout.describe()}: step {e.step_time * 1e3:.2f} ms = compute {e.compute * 1e3:.2f} "
             f"+ bubble {e.bubble_time * 1e3:.2f} + exposed communication {e.comm_exposed * 1e3:.2f} "
             f"(of {e.comm_total * 1e3:.2f}) + optimizer {e.optimizer * 1e3:.2f} ms"
             + (f" + cores time-shared {e.time_shared * 1e3:.2f} ms (x{e.time_share:.2f})" if e.time_shared else "")
             + f" (bubble fraction {e.bubble * 100:.1f}%)",
             "  memory per rank: " + ", ".join(f"{k} {mib(v)}" for k, v in mp.items())]
    for c in e.collectives:
        lines.append(f"  {c.phase:8} {c.kind:14} x{c.count:<4} {c.nbytes / 1e6:9.3f} MB over {c.group} "
                     f"({c.axis}) {c.seconds * 1e3:8.2f} ms  {c.why}")
    return "\n".join(lines)


def refusals(res, limit: int = 12) -> str:
    seen, lines = set(), []
    for L, why in res.refused:
        key = (L.dp, L.tp, L.pp, L.zero, why)
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"  {L.describe():<32} refused: {why}")
        if len(lines) >= limit:
            lines.append(f"  ... ({len(res.refused)} refused in all)")
            break
    return "\n".join(lines)
