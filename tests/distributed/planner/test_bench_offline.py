"""``shardflow bench planner`` without measuring: re-predicting stored rows (``--from-json``),
merging runs as rounds, and the measurement's own reproducibility (between-round Spearman)."""

from __future__ import annotations

import json

import pytest

from shardflow.bench import planner as bp

from .profiles import realistic


def _row(layout, measured, predicted=1.0, **kw):
    base = {"size": "tiny", "ranks": 2, "layout": layout, "dp": 2, "tp": 1, "pp": 1, "zero": 0,
            "microbatches": 1, "grad_sync": "global-bucketed", "predicted_time": predicted,
            "predicted_memory": 1.0, "measured_time": measured, "measured_memory": 1.0}
    return {**base, **kw}


def test_spearman_by_hand_with_ties():
    assert bp._spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert bp._spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    # ranks with a tie: a = (1, 2, 3), b = (1.5, 1.5, 3) -> corr = 0.866
    assert bp._spearman([1, 2, 3], [5, 5, 9]) == pytest.approx(0.8660254, rel=1e-6)


def test_merge_runs_takes_each_layouts_median_and_keeps_every_round():
    a = {"rows": [_row("x", 1.0), _row("y", 2.0)]}
    b = {"rows": [_row("x", 3.0), _row("y", 2.5)]}
    c = {"rows": [_row("x", 2.0, rounds_s=[2.0, 10.0]), _row("y", 2.2)]}
    rows = {r["layout"]: r for r in bp.merge_runs([a, b, c])}
    assert rows["x"]["rounds_s"] == [1.0, 3.0, 2.0, 10.0]
    assert rows["x"]["measured_time"] == pytest.approx(2.5)
    assert rows["y"]["measured_time"] == pytest.approx(2.2)


def test_measurement_spearman_is_the_rounds_agreement():
    """Three layouts, two rounds: the same order -> 1; reversed -> -1."""
    same = [_row(n, t, rounds_s=[t, t * 1.1]) for n, t in (("a", 1.0), ("b", 2.0), ("c", 3.0))]
    assert bp.measurement_spearman(same) == {"tiny/2": pytest.approx(1.0)}
    flip = [_row(n, t, predicted=t, rounds_s=[t, 4.0 - t]) for n, t in (("a", 1.0), ("b", 2.0), ("c", 3.0))]
    assert bp.measurement_spearman(flip) == {"tiny/2": pytest.approx(-1.0)}
    assert bp.measurement_spearman([_row("a", 1.0), _row("b", 2.0), _row("c", 3.0)]) == {}
    summary = bp.summarize(flip)
    assert summary["measurement_spearman"] == pytest.approx(-1.0)


def test_from_json_repredicts_with_the_current_model_and_keeps_the_measurements(tmp_path, capsys):
    """The rows' predictions are recomputed by ``estimate`` with the given profile (the
    stored ones, deliberately wrong here, move aside); measurements stay as stored."""
    from shardflow.distributed.planner.auto import lm_spec
    from shardflow.distributed.planner.cost import estimate
    from shardflow.distributed.planner.layout import Layout

    prof = realistic()
    pfile = tmp_path / "profile.json"
    pfile.write_text(json.dumps(prof.data))
    rows = [_row("dp2 tp1 pp1", 0.5, predicted=123.0),
            _row("dp1 tp1 pp2 m2", 0.7, predicted=456.0, dp=1, pp=2, microbatches=2,
                 grad_sync="after-backward")]
    stored = tmp_path / "run.json"
    stored.write_text(json.dumps({"rows": rows}))
    out = tmp_path / "again.json"
    assert bp.main(["--from-json", str(stored), "--profile", str(pfile), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    dims = bp.SIZES["tiny"]
    spec = lm_spec(bp._model(dims), dims["batch_size"], entry="train")
    want = [estimate(spec, Layout(dp=2, grad_sync="global-bucketed"), prof).step_time,
            estimate(spec, Layout(pp=2, microbatches=2, grad_sync="after-backward"), prof).step_time]
    assert [r["predicted_time"] for r in doc["rows"]] == pytest.approx(want)
    assert [r["stored_predicted_time"] for r in doc["rows"]] == [123.0, 456.0]
    assert [r["measured_time"] for r in doc["rows"]] == [0.5, 0.7]
    assert doc["stored_summary"]["median_time_error"] > 100  # the stored predictions' errors
    assert "re-predicting 2 stored rows" in capsys.readouterr().out


def test_a_grid_cut_short_keeps_every_layout_it_measured(tmp_path, monkeypatch, capsys):
    """The JSON is rewritten after every job (``complete`` false until the grid ends) and
    ``--max-seconds`` starts no job after its time: a run killed or cut short by a machine's
    time limit keeps what it measured. Jobs are faked here (no MPI): each takes 50 ms."""
    import time

    prof = realistic()
    pfile = tmp_path / "profile.json"
    pfile.write_text(json.dumps(prof.data))
    out = tmp_path / "grid.json"
    seen = []

    def fake_measure(n, size, L, args):
        if seen:  # every job after the first finds the earlier ones on disk
            doc = json.loads(out.read_text())
            assert doc["complete"] is False and len(doc["rows"]) == len(seen)
        seen.append(L.describe())
        time.sleep(0.05)
        return {"step_s": 0.01 * len(seen), "memory": 2**20, "steps_s": [0.01]}

    monkeypatch.setattr(bp, "_measure", fake_measure)
    argv = ["--profile", str(pfile), "--sizes", "tiny", "--ranks", "1,2", "--rounds", "1", "--json", str(out)]
    assert bp.main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["complete"] is True and len(doc["rows"]) == len(seen) >= 3
    assert "ms (predicted" in capsys.readouterr().out  # each progress line shows both figures

    seen.clear()
    assert bp.main(argv[:-4] + ["--rounds", "2", "--max-seconds", "0.12", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and "--max-seconds" in doc["stopped"]
    assert 1 <= len(seen) <= 4 and len(doc["rows"]) == len(seen)
    assert all(r["measured_time"] for r in doc["rows"])
