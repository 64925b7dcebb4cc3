"""Slurm allocations: the hosts and task counts ``shardflow run`` uses inside one.

Inside an allocation (``salloc`` / ``sbatch``: ``SLURM_JOB_NODELIST`` is set) and with no
``--hosts`` / ``--hostfile``, ``shardflow run`` starts its ranks on the allocated nodes:
``--hosts node01:2,node02:2`` from ``SLURM_JOB_NODELIST`` (compressed form
``node[01-03,07],gpu1`` expanded by :func:`expand_nodelist`) and ``SLURM_TASKS_PER_NODE``
(``2(x3),1`` expanded by :func:`tasks_per_node`), and ``-n`` = ``SLURM_NTASKS`` (else the
sum of the per-node counts) unless ``-n`` was given. A rank started by ``srun`` itself is
detected by ``_config.launch_info()`` (``SLURM_PROCID`` / ``SLURM_NTASKS``), no launcher
needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import _config


def expand_nodelist(text: str) -> list[str]:
    """``"node[01-03,07],gpu1"`` -> ``["node01", "node02", "node03", "node07", "gpu1"]``."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)", text):
        prefix, ranges, suffix = m.group(1), m.group(2), m.group(3)
        if not prefix.strip():
            continue
        if ranges is None:
            out.append(prefix + suffix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not hi:
                out.append(f"{prefix}{lo}{suffix}")
                continue
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"SLURM_JOB_NODELIST={text!r}: bad range {part!r}")
            out.extend(f"{prefix}{i:0{len(lo)}d}{suffix}" for i in range(int(lo), int(hi) + 1))
    return out


def tasks_per_node(text: str, nodes: int) -> list[int]:
    """``"2(x3),1"`` -> ``[2, 2, 2, 1]``; a single ``"4"`` applies to every node."""
    counts: list[int] = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", item)
        if m is None:
            raise ValueError(f"SLURM_TASKS_PER_NODE={text!r}: expected e.g. '2(x3),1'")
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    if len(counts) == 1 and nodes > 1:
        counts *= nodes
    return counts


@dataclass(frozen=True)
class SlurmAllocation:
    job_id: str
    nodes: tuple[str, ...]
    tasks: tuple[int, ...]  # per node
    ntasks: int

    @property
    def hosts(self) -> str:
        return ",".join(f"{h}:{t}" for h, t in zip(self.nodes, self.tasks))


def allocation(env: dict[str, str] | None = None) -> SlurmAllocation | None:
    """The allocation this process runs in (from the ``SLURM_*`` variables), else None."""
    env = _config.slurm_env() if env is None else env
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        return None
    nodes = expand_nodelist(nodelist)
    per = env.get("SLURM_TASKS_PER_NODE") or env.get("SLURM_NTASKS_PER_NODE") or "1"
    tasks = tasks_per_node(per, len(nodes))
    if len(tasks) != len(nodes):
        raise ValueError(f"SLURM_TASKS_PER_NODE={per!r} gives {len(tasks)} counts for "
                         f"{len(nodes)} nodes ({nodelist})")
    raw = env.get("SLURM_NTASKS", "")
    ntasks = int(raw) if raw.isdigit() else sum(tasks)
    return SlurmAllocation(env.get("SLURM_JOB_ID", "?"), tuple(nodes), tuple(tasks), ntasks)
