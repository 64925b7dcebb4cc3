"""``shardflow run --timeline``: per-rank traces merged by the launcher (collectives with
bytes, waits, data loading, ops), the step summary printed, and the program's own result
unchanged by profiling (checked against the single-process computation)."""

import json

import numpy as np
import pytest

from shardflow.testing.mpi import launch_cli

pytestmark = pytest.mark.mpi

PROGRAM = """
import time

import numpy as np
import shardflow as sf
import shardflow.distributed as dist
from shardflow.profiler import profile, schedule
from shardflow.utils.data import DataLoader, TensorDataset

dist.init_process_group()
r = dist.get_rank()
ds = TensorDataset(sf.tensor(np.arange(24, dtype=np.float32).reshape(12, 2)))
total = sf.zeros(1000)
with profile(schedule=schedule(wait=0, warmup=1, active=2)) as prof:
    for i, (x,) in enumerate(DataLoader(ds, batch_size=4)):
        g = sf.full((1000,), float(x.sum()) * (r + 1))
        dist.all_reduce(g)                       # blocking: 4000 bytes
        if i == 1 and r == 1:
            time.sleep(0.3)                      # rank 0 waits for rank 1 in step 1
        h = dist.all_reduce(sf.ones(1000), async_op=True)
        h.wait()
        total += g
        prof.step()
if r == 0:
    print("RESULT", float(total[0]))
"""


def test_timeline_merges_ranks_with_bytes_waits_and_data(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = tmp_path / "timeline.json"
    res = launch_cli(["-n", "2", "--timeline", str(out), str(script)], timeout=120)
    res.check()
    # the result: each batch's sum times (1 + 2), summed over the three batches
    expected = float(np.arange(24, dtype=np.float32).sum() * 3)
    assert f"RESULT {expected}" in res.output
    doc = json.loads(out.read_text())
    ev = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in ev} == {0, 1}
    for rank in (0, 1):
        mine = [e for e in ev if e["pid"] == rank]
        blocking = [e for e in mine if e["cat"] == "comm" and not e["args"].get("async_op")
                    and e["name"] == "all_reduce"]
        assert len(blocking) == 3 and all(e["args"]["bytes"] == 4000 for e in blocking)
        assert all(e["args"]["group"] == "0,1" for e in blocking)
        assert sum(e["cat"] == "comm" and bool(e["args"].get("async_op")) for e in mine) == 3
        assert sum(e["cat"] == "data" for e in mine) == 4  # 3 batches + the final StopIteration
        assert any(e["cat"] == "op" and e["name"] == "aten::full" for e in mine)
        # the program's own profile (its schedule) is recorded into the rank's trace too
        assert [e["name"] for e in mine if e["cat"] == "step"] == ["ProfilerStep#1", "ProfilerStep#2"]
    rows = doc["stepSummary"]
    assert {(r["rank"], r["step"]) for r in rows} == {(k, f"ProfilerStep#{s}") for k in (0, 1)
                                                      for s in (1, 2)}
    waits = [e for e in ev if e["pid"] == 0 and e["cat"] == "wait" and e["dur"] > 2e5]
    assert len(waits) == 1 and waits[0]["name"] == "wait all_reduce"
    idle = {(r["rank"], r["step"]): r["idle_ms"] for r in rows}
    assert idle[(0, "ProfilerStep#1")] > 200 and idle[(1, "ProfilerStep#1")] < 100
    for r in rows:
        assert r["comm_bytes"] == 8000
        parts = r["compute_ms"] + r["comm_ms"] + r["idle_ms"] + r["data_ms"]
        assert abs(parts - r["wall_ms"]) < 1e-6 or r["compute_ms"] == 0
    assert "timeline of 2 rank(s) written to" in res.stderr and "compute" in res.stderr
    assert not list(tmp_path.glob(".shardflow-timeline-*"))  # per-rank folder removed


def test_timeline_needs_a_python_program(tmp_path):
    res = launch_cli(["-n", "2", "--timeline", str(tmp_path / "t.json"), "true"], timeout=60)
    assert res.returncode == 2
    assert "--timeline needs a Python program" in res.stderr
