"""shardflow.profiler: PyTorch's API (schedule semantics and table columns checked against
torch.profiler), nesting and self time, hooks installed only while recording, DataLoader
events, Chrome export, and the compute/comm/idle step summary."""

import json

import numpy as np
import torch
import torch.profiler as tprof

import shardflow as sf
from shardflow.autograd import dispatch
from shardflow.comm import profiling as slot
from shardflow.profiler import (
    ProfilerAction,
    ProfilerActivity,
    chrome,
    profile,
    record_function,
    schedule,
)
from shardflow.utils.data import DataLoader, TensorDataset


def test_schedule_matches_torch():
    for kw in (dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
               dict(wait=0, warmup=1, active=3), dict(wait=2, warmup=1, active=1, repeat=3)):
        ours, theirs = schedule(**kw), tprof.schedule(**kw)
        assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)], kw
    assert ProfilerAction.RECORD_AND_SAVE.name == tprof.ProfilerAction.RECORD_AND_SAVE.name


def test_table_has_torchs_columns_and_counts_calls():
    x = sf.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(3):
            with record_function("block"):
                y = (x * 2).relu().sum()
        y.backward()
    avgs = {a.key: a for a in prof.key_averages()}
    assert avgs["block"].count == 3 and avgs["aten::mul"].count == 3 and avgs["aten::relu"].count == 3
    # nesting: a block's total = its self time + its children's totals
    children = sum(avgs[k].cpu_time_total for k in ("aten::mul", "aten::relu", "aten::sum"))
    assert abs(avgs["block"].cpu_time_total - avgs["block"].self_cpu_time_total - children) < 1e-6
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert [e.input_shapes for e in by_shape if e.key == "aten::mul"] == [[[3, 4], []]]
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    with tprof.profile(activities=[tprof.ProfilerActivity.CPU]) as tp:
        torch.ones(3).add(1)
    torch_header = tp.key_averages().table(row_limit=1).splitlines()[1]
    assert table.splitlines()[1].split() == torch_header.split()
    assert len([ln for ln in table.splitlines() if ln.strip().endswith(("3", "1"))
                and "%" in ln]) == 2  # row_limit
    assert table.rstrip().splitlines()[-1].startswith("Self CPU time total:")


def test_hooks_installed_only_while_recording():
    # nothing is left in the hook slot by an earlier test (tests/conftest.py turns the global
    # route off after each test that made a placement)
    assert dispatch._hooks == [None, None, None, None, None] and slot.current is None
    assert dispatch._global_handler[0] is None
    with profile() as outer:
        assert slot.current is not None and dispatch._hooks[1] is not None
        assert dispatch._global_handler[0] is not None
        sf.ones(2).exp()
        with profile() as inner:
            sf.ones(2).neg()
        assert slot.current is outer._rec
    assert dispatch._hooks == [None, None, None, None, None] and slot.current is None
    assert dispatch._global_handler[0] is None
    names = [e.name for e in outer.events()]
    assert "aten::exp" in names and "aten::neg" in names  # an inner profile's events reach the outer
    assert "aten::exp" not in [e.name for e in inner.events()]


def test_profiling_global_tensors_keeps_the_global_handler():
    from shardflow.distributed import placement, route, rules, sbp

    p = placement("cpu")  # turns the global route on
    assert dispatch._global_handler[0] is rules.handle
    x = sf.randn(4, 3, placement=p, sbp=sbp.split(0))
    with profile() as prof:
        assert dispatch._global_handler[0] is not rules.handle  # the profiler wraps it
        y = x.exp()
    assert y.is_global and y.sbp == (sbp.split(0),)
    assert "aten::exp" in [e.name for e in prof.events()]
    assert dispatch._global_handler[0] is rules.handle
    route.disable()
    assert dispatch._global_handler[0] is None and dispatch._hooks == [None, None, None, None, None]


def test_dataloader_batches_are_data_events():
    ds = TensorDataset(sf.tensor(np.zeros((10, 2), np.float32)))
    loader = DataLoader(ds, batch_size=4)
    with profile() as prof:
        batches = list(loader)
    assert len(batches) == 3
    data = [e for e in prof.events() if e.cat == "data"]
    assert len(data) == 4  # three batches and the StopIteration call
    assert data[0].name == "enumerate(DataLoader)#_SingleProcessIter.__next__"
    assert type(iter(loader)).__name__ == "_SingleProcessIter"  # unwrapped when not profiling


def test_schedule_steps_and_trace_ready(tmp_path):
    ready = []
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), acc_events=True,
                 on_trace_ready=lambda p: ready.append(p.step_num)) as prof:
        for _ in range(10):
            sf.ones(1).exp()
            prof.step()
    assert ready == [4, 8]
    steps = [e.name for e in prof.events() if e.cat == "step"]
    assert steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#6", "ProfilerStep#7"]
    assert sum(e.name == "aten::exp" for e in prof.events()) == 4
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path), rank=3)
    doc = json.loads(path.read_text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in doc["traceEvents"]} == {3}
    step, exp = next(e for e in xs if e["cat"] == "step"), next(e for e in xs if e["name"] == "aten::exp")
    assert step["ts"] <= exp["ts"] and exp["ts"] + exp["dur"] <= step["ts"] + step["dur"] + 1e-3
    assert [r["step"] for r in prof.step_summary()] == steps


def _x(pid, name, cat, ts, dur, **args):
    return {"ph": "X", "pid": pid, "tid": 1, "name": name, "cat": cat, "ts": ts, "dur": dur,
            "args": args}


def test_step_summary_splits_compute_comm_idle_data():
    # blocking all_reduce #1: rank 1 enters 300 us after rank 0, so rank 0 idles 300 of its 500
    # async all_reduce #3: rank 1 issues it at 180; rank 0 waits from 160 to 190: 20 idle, 10 comm
    # wait on #2 (no peer issue in the trace): all comm
    g = "0,1"
    ev = [_x(0, "ProfilerStep#0", "step", 0, 1000), _x(1, "ProfilerStep#0", "step", 0, 1000),
          _x(0, "enumerate(DataLoader)", "data", 0, 100), _x(1, "enumerate(DataLoader)", "data", 0, 100),
          _x(0, "all_reduce", "comm", 100, 5, bytes=4096, seq=3, group=g, async_op=True),
          _x(1, "all_reduce", "comm", 180, 5, bytes=4096, seq=3, group=g, async_op=True),
          _x(0, "wait all_reduce", "wait", 160, 30, seq=3, group=g),
          _x(0, "all_reduce", "comm", 400, 500, bytes=4096, seq=1, group=g),
          _x(1, "all_reduce", "comm", 700, 200, bytes=4096, seq=1, group=g),
          _x(0, "wait all_reduce", "wait", 950, 40, seq=2, group=g)]
    rows = {r["rank"]: r for r in chrome.step_summary(ev)}
    r0, r1 = rows[0], rows[1]
    assert round(r0["idle_ms"] * 1e3, 6) == 300 + 20
    assert round(r0["comm_ms"] * 1e3, 6) == 5 + 10 + 200 + 40
    assert round(r0["data_ms"] * 1e3, 6) == 100
    assert round(r0["compute_ms"] * 1e3, 6) == 1000 - 100 - 320 - 255
    assert r1["idle_ms"] == 0 and round(r1["comm_ms"] * 1e3, 6) == 5 + 200
    assert r0["comm_bytes"] == 8192 and r1["comm_bytes"] == 8192
    assert "idle" in chrome.format_summary(list(rows.values())).splitlines()[0]
