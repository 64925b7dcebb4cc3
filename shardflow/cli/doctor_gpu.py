"""GPU topology for ``shardflow doctor``: ``nvidia-smi topo -m`` summarised.

:func:`parse_topo` reads the matrix (rows ``GPUi`` / ``NICj`` against the same columns,
then ``CPU Affinity``, ``NUMA Affinity``...); :func:`summarise` counts the GPU-GPU pairs per
link type and says what that means for NCCL:

* ``NV#`` (NVLink, # links), ``PIX`` / ``PXB`` (one or more PCIe switches): direct P2P;
* ``PHB`` (through a PCIe host bridge), ``NODE`` (between host bridges of one NUMA node),
  ``SYS`` (across the CPU interconnect, QPI/UPI/Infinity Fabric): the traffic goes through
  the CPU and is several times slower; keep tensor-parallel groups off such pairs.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

SLOW_LINKS = ("SYS", "NODE", "PHB")


def parse_topo(text: str) -> dict[str, dict[str, str]]:
    """``{row: {column: link}}`` over the GPU/NIC devices of an ``nvidia-smi topo -m`` table."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    header = next((ln for ln in lines if ln.strip().startswith("GPU0")), None)
    if header is None:
        return {}
    cols = [c for c in header.split() if c.startswith(("GPU", "NIC", "mlx"))]
    matrix = {}
    for ln in lines[lines.index(header) + 1:]:
        parts = ln.split()
        if not parts or not parts[0].startswith(("GPU", "NIC", "mlx")):
            if matrix:
                break
            continue
        matrix[parts[0]] = dict(zip(cols, parts[1:1 + len(cols)]))
    return matrix


def summarise(matrix: dict[str, dict[str, str]]) -> tuple[str, str, dict]:
    """(status, one-line detail, data) for the doctor's report."""
    gpus = sorted((k for k in matrix if k.startswith("GPU")), key=lambda g: int(g[3:]))
    pairs = Counter()
    slow = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            link = matrix[a].get(b, "?")
            pairs[link] += 1
            if link in SLOW_LINKS:
                slow.append(f"{a}-{b} {link}")
    data = {"gpus": len(gpus), "pairs": dict(pairs)}
    if len(gpus) < 2:
        return "INFO", f"{len(gpus)} GPU: no GPU-GPU links to check", data
    kinds = ", ".join(f"{n} x {k}" for k, n in pairs.most_common())
    if slow:
        return "WARN", (f"{len(gpus)} GPUs, pairs: {kinds}; {len(slow)} pair(s) cross the CPU "
                        f"({', '.join(slow[:4])}{' ...' if len(slow) > 4 else ''}): put "
                        "tensor-parallel groups on NVLink/PIX pairs"), data
    return "OK", f"{len(gpus)} GPUs, pairs: {kinds} (all direct P2P)", data


def topology() -> tuple[str, str, dict] | None:
    """The summary of this host's ``nvidia-smi topo -m``; None without nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "WARN", f"nvidia-smi topo -m failed: {e}", {}
    if out.returncode != 0:
        return "WARN", f"nvidia-smi topo -m exited {out.returncode}: {out.stderr.strip()[:200]}", {}
    return summarise(parse_topo(out.stdout))
