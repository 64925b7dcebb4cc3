"""shardflow.profiler against torch.profiler on what pytorch/tutorials' profiler recipe
prints: ``aten::`` row names, the Input Shapes column (``group_by_input_shape``), the CPU
Mem / Self CPU Mem columns and their sort keys (``profile_memory``), the Source Location
column (``with_stack`` + ``group_by_stack_n``), the ``ProfilerStep*`` row of a schedule,
and torch's rule that each cycle replaces the last unless ``acc_events=True``."""

import warnings

import pytest
import torch
import torch.profiler as tprof

import shardflow as sf
from shardflow.profiler import ProfilerActivity, profile, record_function, schedule


def _header(table: str) -> list[str]:
    return [c.strip() for c in table.splitlines()[1].split("  ") if c.strip()]


def _rows(table: str) -> dict:
    """``{name: [cells]}`` of a table's rows."""
    lines = table.splitlines()
    out = {}
    for line in lines[3:]:
        if line.startswith("-"):
            break
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        if cells:
            out[cells[0]] = cells[1:]
    return out


def _run(lib, prof_mod, **kw):
    x = lib.ones(3, 4)
    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU], **kw) as p:
        with prof_mod.record_function("block"):
            (x * 2).relu().sum()
    return p


def test_input_shapes_column_and_aten_names_as_torch():
    ours = _run(sf, sf.profiler, record_shapes=True).key_averages(group_by_input_shape=True)
    theirs = _run(torch, tprof, record_shapes=True).key_averages(group_by_input_shape=True)
    t_ours, t_theirs = ours.table(sort_by="cpu_time_total"), theirs.table(sort_by="cpu_time_total")
    assert _header(t_ours) == _header(t_theirs)
    assert _header(t_ours)[-1] == "Input Shapes"
    rows_ours, rows_theirs = _rows(t_ours), _rows(t_theirs)
    # the shapes cell (torch lists the arguments its aten signature has: for aten::sum also
    # the optional dtype, which shardflow's call did not pass, so sum is not compared)
    for name in ("block", "aten::mul", "aten::relu"):
        assert rows_ours[name][-1] == rows_theirs[name][-1], name
    assert set(rows_ours) <= set(rows_theirs)
    assert "Input Shapes" not in _header(_run(sf, sf.profiler).key_averages().table())


def test_profile_memory_columns_and_sort_keys_as_torch():
    ours = _run(sf, sf.profiler, profile_memory=True).key_averages()
    theirs = _run(torch, tprof, profile_memory=True).key_averages()
    for key in ("self_cpu_memory_usage", "cpu_memory_usage"):
        t_ours, t_theirs = ours.table(sort_by=key, row_limit=10), theirs.table(sort_by=key, row_limit=10)
        assert _header(t_ours) == _header(t_theirs)
        assert "CPU Mem" in _header(t_ours) and "Self CPU Mem" in _header(t_ours)
    avg = {e.key: e for e in ours}
    tavg = {e.key: e for e in theirs}
    # 3x4 float32 results: 48 bytes each; relu's memory is its own; block's is its children's
    assert avg["aten::relu"].self_cpu_memory_usage == tavg["aten::clamp_min"].self_cpu_memory_usage == 48
    assert avg["aten::relu"].cpu_memory_usage == tavg["aten::relu"].cpu_memory_usage == 48
    assert avg["aten::sum"].cpu_memory_usage == tavg["aten::sum"].cpu_memory_usage == 4
    assert avg["aten::mul"].cpu_memory_usage == tavg["aten::mul"].cpu_memory_usage == 48
    assert avg["block"].self_cpu_memory_usage == 0 and avg["block"].cpu_memory_usage == 48 + 48 + 4
    rows = _rows(ours.table(sort_by="cpu_memory_usage"))
    assert list(rows)[0] == "block" and rows["aten::sum"][-3:-1] == ["4 B", "4 B"]


def test_views_allocate_nothing_in_the_memory_columns():
    x = sf.ones(4, 6)
    with profile(profile_memory=True) as p:
        x.view(6, 4)
        x.t()
        x.reshape(24)
    assert all(e.cpu_memory_usage == 0 for e in p.key_averages()), [
        (e.key, e.cpu_memory_usage) for e in p.key_averages()]


def test_with_stack_groups_by_source_location():
    def my_forward(x):
        return x.exp()

    with profile(with_stack=True) as p:
        my_forward(sf.ones(2))
    ka = p.key_averages(group_by_stack_n=2)
    exp = next(e for e in ka if e.key == "aten::exp")
    assert len(exp.stack) == 2
    assert exp.stack[0].endswith(": my_forward") and "test_profiler_memory_stack.py(" in exp.stack[0]
    table = ka.table(sort_by="self_cpu_time_total", row_limit=2)
    with tprof.profile(with_stack=True) as tp:
        torch.ones(2).exp()
    theirs = tp.key_averages(group_by_stack_n=2).table(sort_by="self_cpu_time_total", row_limit=2)
    # torch 2.13 on CPU leaves FunctionEvent.stack empty (it lists Python function rows
    # instead), so its table has no Source Location column; the recipe's documented output
    # (and torch's table code when stacks are there) put it last, as shardflow does
    assert _header(table) == _header(theirs) + ["Source Location"]
    assert "my_forward" in table
    # without with_stack there are no stacks: no Source Location column (torch's table too)
    plain = _run(sf, sf.profiler).key_averages(group_by_stack_n=3).table()
    assert "Source Location" not in _header(plain)
    assert _header(plain) == _header(_run(torch, tprof).key_averages(group_by_stack_n=3).table())


def test_schedule_steps_average_as_profilerstep_star_and_cycles_replace():
    ready = []

    def handler(p):
        ready.append({e.key: e.count for e in p.key_averages()})

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with profile(schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=handler) as p:
            for _ in range(8):
                sf.ones(1).exp()
                p.step()
    assert [r["ProfilerStep*"] for r in ready] == [2, 2]
    assert [r["aten::exp"] for r in ready] == [2, 2]  # torch's default: the cycle's own events
    assert any("acc_events=True" in str(w.message) for w in caught)
    treadies = []
    with tprof.profile(schedule=tprof.schedule(wait=1, warmup=1, active=2),
                       on_trace_ready=lambda tp: treadies.append(
                           {e.key: e.count for e in tp.key_averages()})) as tp:
        for _ in range(8):
            torch.ones(1).exp()
            tp.step()
    assert [r["ProfilerStep*"] for r in treadies] == [r["ProfilerStep*"] for r in ready]
    assert [r["aten::exp"] for r in treadies] == [r["aten::exp"] for r in ready]
    with profile(schedule=schedule(wait=1, warmup=1, active=2), acc_events=True,
                 on_trace_ready=handler) as p:
        for _ in range(8):
            sf.ones(1).exp()
            p.step()
    assert ready[-1]["aten::exp"] == 4


def test_unsupported_options_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="experimental_config"):
        profile(experimental_config=object())
    with pytest.raises(TypeError):
        profile(not_an_option=True)
    with profile() as p:
        sf.ones(1).exp()
    with pytest.raises(NotImplementedError, match="export_memory_timeline.*profile_memory=True"):
        p.export_memory_timeline("m.html")
    with pytest.raises(NotImplementedError, match="group_by_overload_name"):
        p.key_averages(group_by_overload_name=True)
    with pytest.raises(NotImplementedError, match="top_level_events_only"):
        p.key_averages().table(top_level_events_only=True)
    with pytest.raises(ValueError, match="self_cpu_memory_usage"):
        p.key_averages().table(sort_by="nonsense")
    assert record_function("x").name == "x" and ProfilerActivity.CPU.name == "CPU"


def test_legacy_autograd_profiler_takes_torchs_keywords_only():
    import inspect

    legacy = sf.autograd.profiler.profile
    assert list(inspect.signature(legacy).parameters) == list(
        inspect.signature(torch.autograd.profiler.profile).parameters)
    with pytest.raises(TypeError):
        legacy(not_an_option=True)  # (it was dropped silently)
    with pytest.raises(NotImplementedError, match="experimental_config"):
        legacy(experimental_config=object())
    with legacy(profile_memory=True) as p:
        (sf.ones(3, 4) * 2).sum()
    assert {e.key: e.cpu_memory_usage for e in p.key_averages()}["aten::mul"] == 48
