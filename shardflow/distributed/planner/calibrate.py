"""``shardflow plan calibrate``: measure this machine into a profile (``profile.py``).

For each rank count ``n`` of ``--ranks`` (default 1, 2, 4) one job of ``n`` ranks is
started through mpiexec (one BLAS thread per rank, as ``shardflow run`` and the bench
suites run them); every rank runs ``microbench.compute_rates`` at once (the rates of ``n``
busy ranks), then, for ``n > 1``, the collectives, the overlap and the wait of a
collective after compute (``sync_wait``), and the per-call time of non-blocking collectives
issued in a batch (``collectives_batched``). The jobs' results are merged into one JSON profile
(``kind: "measured"``, the host with its scheduler tick, the date, the load average before
and after: a loaded machine gives a profile of a loaded machine). ``add_sync_wait`` adds the
tick and the wait to a profile written before they existed, ``add_batched`` the batched
collectives.

Run it on a quiet machine; it takes a few minutes (``--quick``: a smaller grid, for tests).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

from .profile import SCHEMA

__all__ = ["add_batched", "add_sync_wait", "calibrate", "sched_tick_s", "worker_main"]


def _job(n: int, quick: bool, timeout: float, sync_only: bool = False, batched_only: bool = False) -> dict:
    from ...comm.launcher import build_mpiexec_command, kill_session, rank_env

    with tempfile.TemporaryDirectory(prefix="shardflow-calibrate-") as tmp:
        out = os.path.join(tmp, "rates.json")
        argv = [sys.executable, "-u", "-m", "shardflow.distributed.planner.calibrate", "--worker", out]
        if quick:
            argv.append("--quick")
        if sync_only:
            argv.append("--sync-only")
        if batched_only:
            argv.append("--batched-only")
        cmd = build_mpiexec_command(n, argv, tag_output=False)
        env = rank_env({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            log, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_session(proc.pid, grace=1.0)
            raise RuntimeError(f"plan calibrate: the {n}-rank job did not finish in {timeout:g} s; "
                               "is the machine busy? rerun later or with --quick") from None
        if proc.returncode or not os.path.exists(out):
            raise RuntimeError(f"plan calibrate: the {n}-rank job failed (exit {proc.returncode}):\n"
                               + log[-3000:])
        with open(out) as f:
            return json.load(f)


def calibrate(ranks=(1, 2, 4), quick: bool = False, out: str | None = None, name: str | None = None,
              timeout: float = 1800.0, log=print) -> dict:
    """Measure (module docstring); returns the profile document and writes it to ``out``."""
    cores = os.cpu_count() or 1
    load0 = os.getloadavg()[0]
    doc = {"schema": SCHEMA, "name": name or f"{platform.node()}-measured", "kind": "measured",
           "source": f"shardflow plan calibrate on {platform.node()}",
           "measured_at": datetime.datetime.now().isoformat(timespec="seconds"),
           "host": {"node": platform.node(), "cpu": _cpu_name(), "cores": cores,
                    "python": platform.python_version(), "sched_tick_s": sched_tick_s()},
           "cores": cores, "quick": bool(quick), "compute": {}, "collectives": {}, "overlap": {},
           "sync_wait": {}, "collectives_batched": {}}
    for n in sorted(set(int(r) for r in ranks)):
        log(f"[calibrate] {n} rank(s) ...")
        res = _job(n, quick, timeout)
        doc["compute"][str(n)] = res["compute"]
        if n > 1:
            doc["collectives"][str(n)] = res["collectives"]
            doc["overlap"][str(n)] = res["overlap"]
            doc["sync_wait"][str(n)] = res["sync_wait"]
            doc["collectives_batched"][str(n)] = res["collectives_batched"]
    doc["load_average"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
    return doc


def add_sync_wait(base: str, out: str, ranks=(2, 4), quick: bool = False, timeout: float = 600.0,
                  measure: bool = True, log=print) -> dict:
    """The profile ``base`` with the host's scheduler tick and (``measure``) its
    ``sync_wait`` measured now (``microbench.sync_wait``, one job per rank count): a profile
    written before these fields existed gains them without re-measuring the rest. The
    measured field records when and at what load it was measured."""
    with open(base) as f:
        doc = json.load(f)
    doc.setdefault("host", {})["sched_tick_s"] = sched_tick_s()
    if measure:
        load0 = os.getloadavg()[0]
        sw = {}
        for n in sorted(set(int(r) for r in ranks if int(r) > 1)):
            log(f"[calibrate] sync wait, {n} ranks ...")
            sw[str(n)] = _job(n, quick, timeout, sync_only=True)["sync_wait"]
        doc["sync_wait"] = _stamped(sw, load0)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    return doc


def add_batched(base: str, out: str, ranks=(2, 4), quick: bool = False, timeout: float = 600.0,
                log=print) -> dict:
    """The profile ``base`` with ``collectives_batched`` measured now
    (``microbench.batched_alphas`` against ``base``'s blocking fits, one job per rank count
    of ``ranks``), recording when and at what load."""
    from .microbench import BATCH_BYTES

    with open(base) as f:
        doc = json.load(f)
    load0 = os.getloadavg()[0]
    cb = {}
    for n in sorted(set(int(r) for r in ranks if int(r) > 1)):
        log(f"[calibrate] batched collectives, {n} ranks ...")
        per_call = _job(n, quick, timeout, batched_only=True)["collectives_batched"]
        fits = doc.get("collectives", {}).get(str(n), {})
        cb[str(n)] = {kind: {g: max(0.0, t - fits.get(kind, {}).get(g, [0.0, 0.0])[1] * BATCH_BYTES)
                             for g, t in by_group.items()} for kind, by_group in per_call.items()}
    doc["collectives_batched"] = _stamped(cb, load0)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    return doc


def _stamped(section: dict, load0: float) -> dict:
    """``section`` with when it was measured and the load average before and after."""
    section["measured_at"] = datetime.datetime.now().isoformat(timespec="seconds")
    section["load_average"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    return section


def sched_tick_s() -> float | None:
    """Seconds between the kernel's scheduler ticks (``1 / CONFIG_HZ``, from the running
    kernel's config), None where the config cannot be read. A rank spinning in a blocking
    collective on an oversubscribed core is preempted at a tick (``cost._sync_waits``)."""
    import gzip

    for path, opener in (("/proc/config.gz", gzip.open), (f"/boot/config-{platform.release()}", open)):
        try:
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        return 1.0 / int(line.split("=", 1)[1])
        except (OSError, ValueError):
            continue
    return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                        platform.processor())
    except OSError:
        return platform.processor()


def worker_main(argv) -> int:
    """One rank of a calibration job: ``--worker OUT [--quick] [--sync-only | --batched-only]``."""
    from ... import comm
    from .microbench import (
        batched_alphas,
        collective_fits,
        compute_rates,
        overlap_fraction,
        sync_wait,
    )

    out = argv[argv.index("--worker") + 1]
    quick = "--quick" in argv
    world = comm.init()
    if "--batched-only" in argv:  # per call, bytes included: add_batched takes the base's beta off
        res = {"collectives_batched": batched_alphas(world, {}, quick)}
        if world.rank == 0:
            with open(out, "w") as f:
                json.dump(res, f)
        return 0
    if "--sync-only" in argv:
        res = {"sync_wait": sync_wait(world, quick)}
        if world.rank == 0:
            with open(out, "w") as f:
                json.dump(res, f)
        return 0
    barrier = world.barrier if world.size > 1 else None
    res = {"compute": compute_rates(quick, barrier, world.size)}
    if world.size > 1:
        res["collectives"] = collective_fits(world, quick)
        res["overlap"] = overlap_fraction(world, quick)
        res["sync_wait"] = sync_wait(world, quick)
        res["collectives_batched"] = batched_alphas(world, res["collectives"], quick)
    mine = world.all_gather_object(res["compute"]) if world.size > 1 else [res["compute"]]
    res["compute"] = _median_of(mine)
    if world.rank == 0:
        with open(out, "w") as f:
            json.dump(res, f)
    return 0


def _median_of(docs: list):
    """Element-wise median of the ranks' compute documents (same structure)."""
    import statistics

    a = docs[0]
    if isinstance(a, dict):
        return {k: _median_of([d[k] for d in docs]) for k in a}
    if isinstance(a, list):
        return [_median_of([d[i] for d in docs]) for i in range(len(a))]
    if isinstance(a, int | float) and not isinstance(a, bool):
        return round(float(statistics.median(docs)), 6)
    return a


if __name__ == "__main__":
    if sys.argv[1:2] == ["--add-sync-wait"]:  # --add-sync-wait BASE OUT [--tick-only]: onto an older profile
        add_sync_wait(sys.argv[2], sys.argv[3], quick="--quick" in sys.argv, measure="--tick-only" not in sys.argv)
        sys.exit(0)
    if sys.argv[1:2] == ["--add-batched"]:  # --add-batched BASE OUT [--ranks 2,4]: onto an older profile
        rk = sys.argv[sys.argv.index("--ranks") + 1].split(",") if "--ranks" in sys.argv else (2, 4)
        add_batched(sys.argv[2], sys.argv[3], ranks=rk, quick="--quick" in sys.argv)
        sys.exit(0)
    sys.exit(worker_main(sys.argv[1:]))
