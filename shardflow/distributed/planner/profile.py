"""Profiles: what a machine (or a cluster type) computes and communicates at what speed.

Two kinds, one interface (:class:`Profile`):

* ``"measured"`` -- written by ``shardflow plan calibrate`` on this machine. Per number of
  ranks running at once on the host (``concurrency``: two ranks on two hyper-threads share
  one core's FMA units and memory bandwidth, so rates are measured with that many ranks
  busy): a GEMM rate table over a log grid of (M, K, N), interpolated in log space; FLOP
  rates of attention and convolution, forward and backward; the effective bandwidth of each
  memory-bound op family (bytes as ``opcost`` counts them, per second); the optimizer's time
  per parameter element; the framework's per-op overheads (local tensors and global
  tensors). Per collective, group size and job size, a fitted ``alpha + beta * bytes``; the
  fraction of a non-blocking all-reduce hidden behind computation (``overlap``). Beyond the
  host's ``cores`` the rates are those measured at ``cores`` busy ranks (:meth:`Profile._running`)
  and the cost model time-shares the cores (:meth:`Profile.time_share`).
* ``"simulated"`` -- a data file for hardware we cannot measure (``profiles/*.json``, each
  with its sources). Compute is a roofline: ``max(FLOPs / (peak * efficiency(shape)),
  bytes / (HBM bandwidth * efficiency)) + kernel launch``; collectives follow NCCL's ring /
  tree formulas (``collectives.py``) over NVLink inside a node and the node's NICs between
  nodes, shared by the groups that cross them.

A profile never sees a model or a layout: the cost model (``cost.py``) asks it for op
times, optimizer times and collective times.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from dataclasses import dataclass

from .collectives import formula_time, ring_time

__all__ = ["Profile", "Group", "load_profile", "builtin_profiles", "SCHEMA", "PROFILE_DIR"]

SCHEMA = "shardflow-planner-profile/1"
PROFILE_DIR = os.path.join(os.path.dirname(__file__), "profiles")


@dataclass(frozen=True)
class Group:
    """Where a communicator's ranks sit: ``size`` ranks, ``per_node`` of them on each node,
    ``sharing`` groups of this kind crossing each node's NICs at once, in a job of ``world``."""

    size: int
    per_node: int = 0  # 0: all on one node
    sharing: int = 1
    world: int = 0

    @property
    def nodes(self) -> int:
        return 1 if not self.per_node else max(1, math.ceil(self.size / self.per_node))


def _interp(xs, ys, x):
    """Piecewise-linear in log(x), clamped."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    i = bisect.bisect_right(xs, x) - 1
    lx0, lx1, lx = math.log(xs[i]), math.log(xs[i + 1]), math.log(x)
    return ys[i] + (ys[i + 1] - ys[i]) * (lx - lx0) / (lx1 - lx0)


class Profile:
    """A loaded profile (module docstring). ``data`` is the JSON document."""

    def __init__(self, data: dict, path: str | None = None):
        if data.get("schema") != SCHEMA:
            raise ValueError(f"profile {path or data.get('name')!r}: schema {data.get('schema')!r}, "
                             f"expected {SCHEMA!r}; recalibrate with `shardflow plan calibrate`")
        if data.get("kind") not in ("measured", "simulated"):
            raise ValueError(f"profile {path or data.get('name')!r}: kind must be 'measured' or "
                             f"'simulated', got {data.get('kind')!r}")
        self.data, self.path = data, path
        self.name = data.get("name", os.path.basename(path or "profile"))
        self.kind = data["kind"]

    # ---------------------------------------------------------------- description
    @property
    def simulated(self) -> bool:
        return self.kind == "simulated"

    @property
    def ranks_per_node(self) -> int:
        """Ranks one node holds (GPUs per node; cores of a measured host)."""
        if self.simulated:
            return int(self.data["network"]["gpus_per_node"])
        return int(self.data.get("cores", 1))

    def label(self) -> str:
        src = self.data.get("sources") or [self.data.get("source", "")]
        what = "SIMULATED (data file, not measured here)" if self.simulated else "measured"
        return f"{self.name} [{what}]" + (f"; source: {src[0]}" if src and src[0] else "")

    def peak_flops(self, precision: str = "fp32") -> float:
        """Peak FLOP/s of one rank: the datasheet's (simulated) or the best measured GEMM
        rate with one rank busy (measured): the denominator of MFU."""
        if self.simulated:
            return float(self.data["device"]["peak_tflops"][precision]) * 1e12
        g = self._conc(1)["gemm"]
        return max(v for plane in g["gflops"] for row in plane for v in row if v) * 1e9

    # ---------------------------------------------------------------- compute
    def _conc(self, conc: int) -> dict:
        comp = self.data["compute"]
        keys = sorted(int(k) for k in comp)
        k = min((k for k in keys if k >= conc), default=keys[-1])
        return comp[str(k)]

    def _running(self, conc: int) -> dict:
        """The rates of one rank while it runs, with ``conc`` ranks busy on the host: those
        measured at ``min(conc, cores)`` concurrency. Beyond the host's cores the extra
        ranks do not run faster or slower while they hold a core -- they wait for one, which
        :meth:`time_share` accounts for over a whole step (a calibration op of a few
        microseconds finishes inside one scheduler slice, so the rates measured with more
        ranks than cores are those of a rank holding a core, or, for the longest GEMMs, a
        mix of holding and waiting: neither is a rate to scale by the oversubscription)."""
        if self.simulated:
            return self._conc(conc)
        return self._conc(max(1, min(conc, self.host_cores or conc)))

    @property
    def host_cores(self) -> int | None:
        """Cores of the measured host (``cores`` in the profile); None for a simulated
        profile (every rank has its own device)."""
        if self.simulated:
            return None
        return int(self.data.get("cores", 0)) or None

    def sync_wait(self, ranks: int, work_s: float) -> float:
        """Wall seconds one blocking synchronisation adds to a step of ``ranks`` ranks whose
        ranks compute ``work_s`` between two synchronisations, where the ranks outnumber the
        host's cores: the descheduled-peer wait. Measured (``microbench.sync_wait``, at that
        job size, interpolated in log ``work_s``) where the profile has it; else one
        scheduler tick of the host (``host.sched_tick_s``): the ranks that arrive first spin
        (the blocking data step does) on cores the last ones wait for, and a rank queued for
        a core gets one when the scheduler, at a tick, finds the running one's slice used up
        (a spinner wakes nobody, so nothing preempts it sooner): on average half a tick for
        the first arrivals, then half a tick for the last ones, spinning while the first
        wait to run again to finish the exchange. 0 within the cores (the ranks arrive
        together), on simulated hardware, and where neither is known."""
        cores = self.host_cores
        if not cores or ranks <= cores:
            return 0.0
        sw = self.data.get("sync_wait", {})
        keys = sorted(int(k) for k in sw if k.isdigit() and int(k) > cores)  # oversubscribed jobs only
        if keys:
            e = sw[str(min((k for k in keys if k >= ranks), default=keys[-1]))]
            return max(0.0, _interp(e["work_s"], e["extra_s"], max(work_s, 1e-9)))
        return float(self.data.get("host", {}).get("sched_tick_s") or 0.0)

    def time_share(self, busy_ranks: float) -> float:
        """How much longer a stretch of work takes when ``busy_ranks`` ranks compute at once
        on the host: ``busy / cores`` beyond the cores (the scheduler shares them out), 1
        within them and on simulated hardware."""
        cores = self.host_cores
        if not cores or busy_ranks <= cores:
            return 1.0
        return busy_ranks / cores

    def gemm_time(self, gemms, conc: int = 1, precision: str = "fp32") -> float:
        t = 0.0
        for m, k, n, c in gemms:
            flops = 2.0 * m * k * n * c
            if flops:
                t += flops / self._gemm_rate(m, k, n, conc, precision)
        return t

    def _gemm_rate(self, m, k, n, conc, precision) -> float:
        if self.simulated:
            eff = self.data["efficiency"]["gemm"]
            xs, ys = [p[0] for p in eff], [p[1] for p in eff]
            return self.peak_flops(precision) * _interp(xs, ys, min(m, k, n))
        g = self._running(conc)["gemm"]
        grid, table = g["grid"], g["gflops"]
        # trilinear interpolation of log(rate) over log(M), log(K), log(N), clamped
        def pos(v):
            v = min(max(v, grid[0]), grid[-1])
            i = min(bisect.bisect_right(grid, v) - 1, len(grid) - 2)
            f = (math.log(v) - math.log(grid[i])) / (math.log(grid[i + 1]) - math.log(grid[i]))
            return i, f
        (i, fi), (j, fj), (l, fl) = pos(m), pos(k), pos(n)
        acc = 0.0
        for di, wi in ((0, 1 - fi), (1, fi)):
            for dj, wj in ((0, 1 - fj), (1, fj)):
                for dl, wl in ((0, 1 - fl), (1, fl)):
                    w = wi * wj * wl
                    if w:
                        acc += w * math.log(_cell(table, i + di, j + dj, l + dl))
        return math.exp(acc) * 1e9

    def op_time(self, cost, phase: str, conc: int = 1, precision: str = "fp32") -> float:
        """Seconds of one op's ``phase`` ("fwd" or "bwd") from its :class:`~.opcost.OpCost`,
        without the per-op overhead (:meth:`overhead`)."""
        fwd = phase == "fwd"
        fam = cost.family
        if fam == "shape":
            return 0.0
        if fam == "gemm":
            return self.gemm_time(cost.fwd_gemms if fwd else cost.bwd_gemms, conc, precision)
        flops = cost.flops if fwd else cost.bwd_flops
        nbytes = cost.bytes if fwd else cost.bwd_bytes
        if self.simulated:
            eff = self.data["efficiency"]
            t_mem = nbytes / (float(self.data["device"]["memory_gbs"]) * 1e9 * eff["memory"])
            if fam == "attention":  # unfused: the two products (GEMMs), then softmax passes over P
                g = self.gemm_time(cost.fwd_gemms if fwd else cost.bwd_gemms, conc, precision)
                return g / eff.get("attention", 1.0) * eff["gemm"][-1][1] + t_mem
            if fam == "conv":
                return max(t_mem, flops / (self.peak_flops(precision) * eff["conv"]))
            return t_mem
        c = self._running(conc)
        if fam in ("attention", "conv"):
            rate = c[fam]["fwd_gflops" if fwd else "bwd_gflops"] * 1e9
            return flops / rate if flops else 0.0
        table = c["bandwidth_gbs"]
        e = table.get(cost.name) or table.get(fam) or table["elementwise"]
        rate = _interp(e["elems"], e["fwd" if fwd else "bwd"], max(1.0, cost.elems))
        return nbytes / (rate * 1e9)

    def overhead(self, conc: int = 1, global_tensors: bool = False) -> tuple[float, float]:
        """``(forward, backward)`` seconds of framework overhead per op (per autograd node)."""
        if self.simulated:
            k = float(self.data.get("kernel_us", 5.0)) * 1e-6
            return k, 2 * k
        o = self._running(conc)["overhead_us"]
        f, b = o["op_fwd"], o["op_bwd"]
        if global_tensors:
            f, b = f + o["global_op_fwd"], b + o["global_op_bwd"]
        return f * 1e-6, b * 1e-6

    def step_overhead(self, conc: int = 1) -> float:
        """Fixed seconds per training step outside the ops (zero_grad, the step's Python)."""
        if self.simulated:
            return 0.0
        return self._running(conc)["overhead_us"].get("step", 0.0) * 1e-6

    def optimizer_time(self, elements: float, conc: int = 1, optimizer: str = "adamw",
                       precision: str = "fp32") -> float:
        """Seconds of one optimizer step over ``elements`` parameter elements of this rank."""
        if self.simulated:
            per = self.data["efficiency"]["optimizer_bytes_per_param"][precision]
            return elements * per / (float(self.data["device"]["memory_gbs"]) * 1e9
                                     * self.data["efficiency"]["memory"])
        ns = self._running(conc)["optimizer_ns"]
        return elements * ns.get(optimizer, ns["adamw"]) * 1e-9

    # ---------------------------------------------------------------- communication
    def collective_time(self, kind: str, nbytes: float, group: Group, batched: bool = False) -> float:
        """Seconds of one collective of ``nbytes`` (each rank's input; all-gather: output).
        ``batched``: one of many non-blocking calls issued together and waited for one by one
        (``fully_shard``'s per-parameter calls): a measured profile's ``collectives_batched``
        alpha where it has one for this job and group size (``microbench.batched_alphas``),
        with the blocking fit's beta; else the blocking fit."""
        if group.size <= 1 and kind != "send_recv":
            return 0.0
        if self.simulated:
            alpha, bw = self._link(group)
            return formula_time(kind, max(group.size, 2 if kind == "send_recv" else 1), nbytes, alpha, bw,
                                tree=self.data["network"].get("tree", True))
        return self._measured_collective(kind, nbytes, group, batched)

    def _link(self, group: Group) -> tuple[float, float]:
        """``(alpha seconds, bus bandwidth bytes/s)`` of a group's slowest link."""
        net = self.data["network"]
        intra = float(net["intra_busbw_gbs"]) * 1e9
        if group.nodes <= 1:
            return float(net["intra_alpha_us"]) * 1e-6, intra
        nic = float(net["node_nic_gbs"]) * 1e9 * float(net.get("inter_efficiency", 1.0))
        return float(net["inter_alpha_us"]) * 1e-6, min(intra, nic / max(1, group.sharing))

    def _measured_collective(self, kind, nbytes, group: Group, batched: bool = False) -> float:
        coll = self.data["collectives"]
        worlds = sorted(int(w) for w in coll)
        if not worlds:
            raise ValueError(f"profile {self.name}: no collectives measured; run `shardflow plan calibrate`")
        w = min((x for x in worlds if x >= (group.world or group.size)), default=worlds[-1])
        table = coll[str(w)].get(kind) or coll[str(w)]["all_reduce"]
        sizes = sorted(int(s) for s in table)
        n = min((s for s in sizes if s >= group.size), default=sizes[-1])
        alpha, beta = table[str(n)]
        if batched and n == group.size:
            alpha = self.data.get("collectives_batched", {}).get(str(w), {}).get(kind, {}).get(str(n), alpha)
        if n == group.size or kind == "send_recv":
            return alpha + beta * nbytes
        # a larger group than measured: the ring formula's growth from the measured size
        scale_a = (group.size - 1) / max(1, n - 1)
        scale_b = ring_time(kind, group.size, 1.0, 0.0, 1.0) / max(1e-12, ring_time(kind, n, 1.0, 0.0, 1.0))
        return alpha * scale_a + beta * nbytes * scale_b

    def overlap(self, world: int = 1) -> float:
        """Fraction of a non-blocking collective hidden behind computation (0..1)."""
        ov = self.data.get("overlap", 0.0)
        if isinstance(ov, dict):
            keys = sorted(int(k) for k in ov)
            if not keys:
                return 0.0
            k = min((x for x in keys if x >= world), default=keys[-1])
            return float(ov[str(k)])
        return float(ov)


def _cell(table, i, j, k) -> float:
    v = table[i][j][k]
    if v:
        return v
    # unmeasured (too large to time quickly): the rate has saturated there; take the
    # measured cell nearest on the grid
    best, dist = None, None
    for a, plane in enumerate(table):
        for b, row in enumerate(plane):
            for c, x in enumerate(row):
                if x:
                    d = abs(a - i) + abs(b - j) + abs(c - k)
                    if dist is None or d < dist or (d == dist and x > best):
                        best, dist = x, d
    if best is None:
        raise ValueError("profile: the GEMM table is empty; recalibrate")
    return best


def load_profile(path_or_name: str) -> Profile:
    """A profile from a JSON file, or a built-in one by name (``builtin_profiles()``)."""
    path = path_or_name
    if not os.path.exists(path):
        cand = os.path.join(PROFILE_DIR, path_or_name + ("" if path_or_name.endswith(".json") else ".json"))
        if not os.path.exists(cand):
            raise FileNotFoundError(
                f"profile {path_or_name!r}: no such file, and no built-in profile of that name "
                f"(built-in: {', '.join(builtin_profiles())}); write one for this machine with "
                "`shardflow plan calibrate --out FILE`")
        path = cand
    with open(path) as f:
        return Profile(json.load(f), path)


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped in ``profiles/`` (all simulated: data files)."""
    if not os.path.isdir(PROFILE_DIR):
        return []
    return sorted(f[:-5] for f in os.listdir(PROFILE_DIR) if f.endswith(".json"))
