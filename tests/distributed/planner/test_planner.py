"""The planner end to end in one process: invalid layouts refused with their reason, the
trace of a real GPT (its FLOPs equal the model's own count; its extrapolation to a larger
size equals a direct trace), the obviously right layout chosen on constructed cases, and
the ``shardflow plan`` command."""

import json

import numpy as np
import pytest

import shardflow as sf
from shardflow.distributed.planner import (
    Layout,
    ModelShape,
    enumerate_layouts,
    estimate,
    explain,
    invalid_reason,
    model_shape,
    plan,
    trace_model,
    trace_step,
)
from shardflow.distributed.planner.auto import lm_spec
from shardflow.distributed.planner.opcost import op_cost
from shardflow.models import GPT, GPTConfig

from .profiles import measured, realistic


def _gpt(**kw):
    sf.manual_seed(0)
    cfg = dict(block_size=16, vocab_size=32, n_layer=2, n_head=2, n_embd=32)
    cfg.update(kw)
    return GPT(GPTConfig(**cfg))


@pytest.mark.parametrize("layout, world, why", [
    (Layout(dp=2, tp=3), 4, "dp x tp x pp = 6, not the 4 ranks"),
    (Layout(tp=3, dp=1), 3, "tp=3 does not divide the 4 attention heads"),
    (Layout(pp=3, microbatches=3), 3, "3 pipeline stages do not divide the 4 layers"),
    (Layout(dp=2, tp=2, zero=1), 4, "zero with tp or pp is not wired"),
    (Layout(dp=4, zero=2, grad_sync="sharded"), 4, "zero=2 is not wired into parallelize"),
    (Layout(dp=4, grad_sync="bucketed"), 4, "parallelize runs plain data parallelism on global tensors"),
    (Layout(dp=3), 3, "the global batch 8 does not split into dp=3"),
    (Layout(dp=1, zero=1), 1, "dp must be > 1"),
    (Layout(pp=2, microbatches=4, schedule="interleaved", virtual=2), 2, "not reachable through parallelize"),
    (Layout(pp=2, microbatches=2, recompute=True), 2, "recomputation is not wired into parallelize"),
])
def test_invalid_layouts_are_refused_with_the_reason(layout, world, why):
    reason = invalid_reason(layout, world, ModelShape(n_layer=4, n_head=4), 8, "parallelize")
    assert reason is not None and why in reason, reason


def test_enumeration_keeps_every_valid_layout_and_says_why_for_the_rest():
    valid, refused = enumerate_layouts(4, ModelShape(n_layer=4, n_head=4), 16, "train", microbatches=(2, 4))
    names = {L.describe() for L in valid}
    for want in ("dp4 tp1 pp1 ddp", "dp4 tp1 pp1", "dp4 tp1 pp1 z1", "dp4 tp1 pp1 z3", "dp2 tp2 pp1",
                 "dp1 tp4 pp1", "dp2 tp1 pp2 m2", "dp1 tp2 pp2 m4", "dp1 tp1 pp4 m4"):
        assert want in names, (want, sorted(names))
    assert all(invalid_reason(L, 4, ModelShape(4, 4), 16, "train") is None for L in valid)
    assert refused and all(why for _, why in refused)
    assert {L.microbatches for L in valid if L.pp > 1} == {2, 4}  # the sets asked for
    assert {L.microbatches for L in valid if L.pp == 1} == {1}


def test_gpt_trace_flops_equal_the_models_own_count():
    m = _gpt()
    B, T = 3, 16
    x = sf.tensor(np.random.default_rng(0).integers(0, 32, (B, T)))
    tr = trace_step(m, (x, x), lambda mod, inp: mod(*inp)[1], batch=B)
    fwd = sum(op_cost(o).flops for o in tr.ops)
    bwd = sum(op_cost(o).bwd_flops for o in tr.ops if o.needs_grad)
    assert fwd == m.flops_per_sample(T) * B
    assert fwd + bwd == m.flops_per_sample(T, training=True) * B
    assert tr.n_layers == 2 and tr.stack_path == "transformer.h"
    assert {p.name for p in tr.params} == {n for n, _ in m.named_parameters()}
    assert tr.forward_retained > 0 and tr.grad_bytes == 4 * m.num_parameters()


def _build(d):
    m = _gpt(block_size=d["T"], vocab_size=d["V"], n_layer=d["L"], n_head=d["nh"], n_embd=d["C"])
    rng = np.random.default_rng(0)
    x = sf.tensor(rng.integers(0, d["V"], (d["batch"], d["T"])))
    return m, (x, x), (lambda mod, inp: mod(*inp)[1]), d["batch"]


def test_extrapolated_trace_equals_a_direct_trace():
    """Traced at tiny sizes (each dimension doubled once), extrapolated to a larger model:
    the same ops with the same shapes and parameters as a trace of that model, and FLOPs
    equal to its own count; activation memory within 25% of the measured."""
    mt = trace_model(_build, dict(batch=1, T=8, C=16, nh=2, V=32, L=1), layer_dim="L")
    tgt = dict(batch=2, T=32, C=64, nh=4, V=96, L=3)
    got = mt.at(**tgt)
    m, inp, loss, b = _build(tgt)
    want = trace_step(m, inp, loss, batch=b)
    assert [(o.name, o.in_shapes, o.out_shapes, o.module, o.layer, o.params) for o in got.ops] == \
           [(o.name, o.in_shapes, o.out_shapes, o.module, o.layer, o.params) for o in want.ops]
    assert [(p.name, p.shape) for p in got.params] == [(p.name, p.shape) for p in want.params]
    assert sum(op_cost(o).flops for o in got.ops) == m.flops_per_sample(32) * 2
    assert got.forward_retained == pytest.approx(want.forward_retained, rel=0.25)
    with pytest.raises(ValueError, match="unknown dimension"):
        mt.at(width=3)


def test_tiny_model_is_planned_pure_data_parallel():
    m = _gpt(n_layer=2, n_head=2, n_embd=32, block_size=16)
    spec = lm_spec(m, 16, entry="train")
    res = plan(spec, 4, realistic(), model_shape(m))
    w = res.winner
    assert (w.layout.tp, w.layout.pp) == (1, 1), explain(res)
    assert w.layout.dp == 4
    assert "winner: dp4" in explain(res)
    # the ranking is by predicted time among the layouts that fit
    times = [e.step_time for e in res.estimates if e.fits]
    assert times == sorted(times)


def test_model_too_big_for_one_rank_is_sharded():
    m = _gpt(n_layer=2, n_head=4, n_embd=256, block_size=16, vocab_size=64)
    spec = lm_spec(m, 8, entry="train")
    prof = realistic()
    free = plan(spec, 4, prof, model_shape(m))
    ddp = free.find(Layout(dp=4, grad_sync="bucketed"))
    z3 = free.find(Layout(dp=4, zero=3, grad_sync="sharded"))
    assert z3.memory < ddp.memory
    spec.mem_per_rank = (z3.memory + ddp.memory) / 2  # plain data parallelism cannot fit
    res = plan(spec, 4, prof, model_shape(m))
    w = res.winner
    assert w.memory <= spec.mem_per_rank
    assert w.layout.zero >= 2 or w.layout.tp > 1 or w.layout.pp > 1, w.layout
    assert all(not e.fits for e in res.estimates
               if e.layout.tp == 1 and e.layout.pp == 1 and e.layout.zero == 0)
    spec.mem_per_rank = 1.0  # nothing fits: no winner, and the plan says how much is needed
    res = plan(spec, 4, prof, model_shape(m))
    assert res.winner is None and "no layout fits" in res.notes[0]


def test_estimate_reports_every_term():
    m = _gpt()
    spec = lm_spec(m, 8, entry="train")
    e = estimate(spec, Layout(dp=2, pp=2, microbatches=2), realistic())
    parts = e.compute + e.bubble_time + e.comm_exposed + e.optimizer
    assert e.step_time == pytest.approx(parts)
    assert 0 < e.bubble < 1 and e.comm_bytes > 0 and 0 < e.mfu < 1
    assert e.tokens_per_s == pytest.approx(8 * 16 / e.step_time)
    assert {"params", "grads", "optimizer", "activations", "peak"} <= set(e.memory_parts)


def test_plan_command_prints_the_ranked_table(tmp_path, capsys):
    from shardflow.cli.plan import main

    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(realistic().data))
    out = tmp_path / "plan.json"
    rc = main(["--model", "gpt", "--ranks", "2", "--profile", str(prof), "--vocab-size", "32", "--n-layer", "2",
               "--n-embd", "32", "--n-head", "2", "--block-size", "16", "--batch-size", "8", "--json", str(out),
               "--refused"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "step ms" in text and "winner:" in text and "run it: shardflow run -n 2 shardflow train gpt" in text
    assert "refused:" in text
    doc = json.loads(out.read_text())
    assert doc["ranks"] == 2 and len(doc["rows"]) >= 5
    assert all(r["step_time"] > 0 and r["memory"] > 0 for r in doc["rows"])
    assert main(["--model", "gpt", "--ranks", "2", "--profile", str(tmp_path / "missing.json"),
                 "--vocab-size", "32"]) == 2
    assert "shardflow plan calibrate" in capsys.readouterr().err


def test_simulated_profiles_are_labelled_and_carry_sources():
    from shardflow.distributed.planner import builtin_profiles, load_profile

    names = builtin_profiles()
    assert {"a100-selene", "v100-dlperf", "h100-ib400"} <= set(names)
    for n in names:
        p = load_profile(n)
        assert p.simulated and "SIMULATED" in p.label()
        assert p.data["sources"] and p.peak_flops("mixed") > p.peak_flops("fp32") > 0
    assert measured().label().endswith("source: tests")


def test_train_layout_auto_refuses_layout_flags_and_a_missing_profile(tmp_path, capsys):
    from shardflow.cli.train import main

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x\n" * 50)
    base = ["gpt", "--data", str(corpus), "--out", str(tmp_path / "o"), "--max-steps", "1", "--no-progress",
            "--layout", "auto"]
    assert main([*base, "--tp", "2"]) != 0
    assert "--layout auto chooses the layout itself, but --tp were given" in capsys.readouterr().err
    assert main([*base, "--plan-profile", str(tmp_path / "none.json")]) != 0
    assert "--plan-profile" in capsys.readouterr().err
    assert main([*base[:-1], "sideways"]) != 0
    assert "--layout: got 'sideways'" in capsys.readouterr().err


def test_tracing_leaves_the_random_stream_and_gradients_alone():
    m = _gpt(dropout=0.5)
    x = sf.tensor(np.random.default_rng(0).integers(0, 32, (2, 16)))
    sf.manual_seed(123)
    want = sf.rand(4).numpy()
    sf.manual_seed(123)
    trace_step(m, (x, x), lambda mod, inp: mod(*inp)[1], batch=2)
    np.testing.assert_array_equal(sf.rand(4).numpy(), want)
    assert all(p.grad is None for p in m.parameters())


def test_parallelize_auto_refuses_explicit_layout_arguments():
    m = _gpt()
    with pytest.raises(ValueError, match="layout='auto' chooses dp/tp/pp/zero"):
        sf.parallelize(m, sf.optim.AdamW(m.parameters()), dp=2, layout="auto", batch_size=8)
    with pytest.raises(ValueError, match="layout must be None"):
        sf.parallelize(m, sf.optim.AdamW(m.parameters()), layout="fast", batch_size=8)


def test_trace_keeps_on_an_op_only_the_outputs_alive_at_the_end_of_forward():
    """A block's residual projections (``attn.c_proj``, ``mlp.c_proj``: the ops a
    tensor-parallel plan makes row-parallel) are read only by the residual add, which saves
    nothing: their outputs are freed inside the forward and keep nothing. The add's output
    (saved by the next LayerNorm) and the MLP's hidden activations (saved by GELU and the
    projection) are kept whole. (Counting the freed outputs put their bytes on ops tp leaves
    whole: tp layouts were predicted 4-6% high.)"""
    B, T, C = 8, 16, 64
    m = _gpt(n_layer=1, n_embd=C)
    x = sf.tensor(np.random.default_rng(0).integers(0, 32, (B, T)))
    tr = trace_step(m, (x, x), lambda mod, inp: mod(*inp)[1], batch=B)
    act = B * T * C * 4  # one (B, T, C) float32 activation
    by = {}
    for o in tr.ops:
        by.setdefault((o.name, o.module), []).append(o.retained)
    for proj in ("transformer.h.0.attn.c_proj", "transformer.h.0.mlp.c_proj"):
        assert by[("linear", proj)][0] < 0.1 * act, (proj, by[("linear", proj)])  # its objects only
    adds = by[("add", "transformer.h.0")]
    assert adds == [pytest.approx(act, rel=0.1)] * 2, adds
    assert by[("gelu", "transformer.h.0.mlp.gelu")][0] == pytest.approx(4 * act, rel=0.1)
    assert sum(o.retained for o in tr.ops) == pytest.approx(tr.forward_retained)
