"""``shardflow.jit.compile_step``: a compiled training step (forward, backward, optimizer)
against the eager step it replaces, on small MLP, CNN and GPT-mini models."""

import numpy as np
import pytest

import shardflow as sf
import shardflow.nn.functional as F
from shardflow.bench.workloads import gpt_mini
from shardflow.jit import compile_step


def _mlp():
    return sf.nn.Sequential(sf.nn.Linear(12, 32), sf.nn.ReLU(), sf.nn.Linear(32, 32), sf.nn.GELU(),
                            sf.nn.Linear(32, 5))


def _cnn():
    nn = sf.nn
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 5))


def _gpt():
    return gpt_mini(sf, n_layer=2, d_model=32, n_head=2, block_size=16, vocab=40)


def _ce(m, x, y):
    return F.cross_entropy(m(x), y)


def _gpt_loss(m, x, y):
    logits = m(x)
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


def _batch(kind, step, batch=6):
    r = np.random.default_rng(step)
    if kind == "mlp":
        return sf.from_numpy(r.standard_normal((batch, 12)).astype(np.float32)), \
            sf.from_numpy(r.integers(0, 5, batch))
    if kind == "cnn":
        return sf.from_numpy(r.standard_normal((batch, 3, 8, 8)).astype(np.float32)), \
            sf.from_numpy(r.integers(0, 5, batch))
    return sf.from_numpy(r.integers(0, 40, (2, 16))), sf.from_numpy(r.integers(0, 40, (2, 16)))


CASES = {
    "mlp": (_mlp, _ce, lambda ps: sf.optim.SGD(ps, lr=0.05, momentum=0.9)),
    "cnn": (_cnn, _ce, lambda ps: sf.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True)),
    "gpt": (_gpt, _gpt_loss, lambda ps: sf.optim.AdamW(ps, lr=3e-3, weight_decay=0.1)),
}


def _pair(kind):
    build, loss_fn, make_opt = CASES[kind]
    sf.manual_seed(0)
    a = build()
    b = build()
    b.load_state_dict({k: sf.tensor(v.numpy().copy()) for k, v in a.state_dict().items()})
    sa = compile_step(a, make_opt(a.parameters()), loss_fn)
    sb = compile_step(b, make_opt(b.parameters()), loss_fn)
    return a, b, sa, sb


def _assert_same_state(a, b, tol):
    for (name, u), v in zip(a.named_buffers(), b.buffers(), strict=True):  # BatchNorm's statistics
        np.testing.assert_allclose(v.numpy(), u.numpy(), err_msg=name, **tol)
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), err_msg=name, **tol)
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), err_msg=name, **tol)


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_ten_compiled_steps_track_eager(kind):
    eager_model, model, eager, step = _pair(kind)
    tol = dict(rtol=1e-5, atol=1e-6)
    for s in range(10):
        x, y = _batch(kind, s)
        ref = eager.eager_step(x, y)
        loss = step(x, y)
        assert not loss.requires_grad
        np.testing.assert_allclose(float(loss), float(ref), rtol=1e-6)
        _assert_same_state(eager_model, model, tol)  # parameters and .grad after each step
    assert step.stats == {**step.stats, "traces": 1, "replays": 9, "eager": 0}, step.explain()
    log = step.explain()
    assert "compiled step for inputs" in log and "0 via the engine" in log, log


def test_new_input_shape_retraces_and_known_shapes_replay():
    eager_model, model, eager, step = _pair("mlp")
    for s, batch in enumerate([6, 6, 3, 6, 3]):
        x, y = _batch("mlp", s, batch)
        np.testing.assert_allclose(float(step(x, y)), float(eager.eager_step(x, y)), rtol=1e-6)
    _assert_same_state(eager_model, model, dict(rtol=1e-5, atol=1e-6))
    assert step.stats["traces"] == 2 and step.stats["replays"] == 3 and step.stats["eager"] == 0
    model.eval()  # the module's training flag is part of the guard key
    eager_model.eval()
    x, y = _batch("mlp", 9)
    step(x, y)
    assert step.stats["traces"] == 3
    model.train()
    model[1].eval()  # one submodule's flag is guarded too
    step(x, y)
    assert step.stats["traces"] == 4


def test_parameter_without_gradient_keeps_none_as_eager():
    eager_model, model, eager, step = _pair("mlp")
    for m in (eager_model, model):
        m[2].bias.requires_grad_(False)  # frozen: no .grad, not updated
    for s in range(3):
        x, y = _batch("mlp", s)
        eager.eager_step(x, y)
        step(x, y)
    assert model[2].bias.grad is None and step.stats["replays"] == 2
    _assert_same_state(eager_model, model, dict(rtol=1e-5, atol=1e-6))


def test_grads_that_share_one_array_are_copied():
    """``add``'s backward hands one array to both inputs: the plan gives .grad the backward's
    own array (no copy) only once; the second parameter gets a copy, as eager's .grad do."""
    w = sf.nn.Parameter(sf.randn(5, 3))
    b1, b2 = sf.nn.Parameter(sf.randn(5, 3)), sf.nn.Parameter(sf.randn(5, 3))
    model = sf.nn.Module()
    model.w, model.b1, model.b2 = w, b1, b2
    step = compile_step(model, sf.optim.SGD([w, b1, b2], lr=0.1),
                        lambda m, x: ((m.b1 + m.b2) * (x * m.w)).square().sum())
    x = sf.randn(5, 3)
    for _ in range(3):
        step(x)
    assert step.stats["replays"] == 2, step.explain()
    np.testing.assert_array_equal(b1.grad.numpy(), b2.grad.numpy())
    assert not np.shares_memory(b1.grad.array, b2.grad.array)
    b1.grad.mul_(0.0)  # an in-place change of one .grad (clip_grad_norm_ does this) ...
    assert np.abs(b2.grad.numpy()).sum() > 0  # ... leaves the other alone


def _dropout_loss(m, x, y):
    return F.cross_entropy(F.dropout(m(x), p=0.5, training=True), y)


def _inplace_loss(m, x, y):
    h = m(x)
    h.mul_(0.5)
    return F.cross_entropy(h, y)


@pytest.mark.parametrize("loss_fn,why", [(_dropout_loss, "random op 'dropout'"),
                                         (_inplace_loss, "in-place op 'mul_'")])
def test_untraceable_step_falls_back_to_eager_with_the_reason(monkeypatch, capsys, loss_fn, why):
    monkeypatch.setenv("SHARDFLOW_DEBUG", "compile")
    eager_model, model, _, _ = _pair("mlp")
    opt_e = sf.optim.SGD(eager_model.parameters(), lr=0.1)
    step = compile_step(model, sf.optim.SGD(model.parameters(), lr=0.1), loss_fn)
    eager = compile_step(eager_model, opt_e, loss_fn)
    for s in range(3):
        x, y = _batch("mlp", s)
        sf.manual_seed(s)
        ref = eager.eager_step(x, y)
        sf.manual_seed(s)
        np.testing.assert_allclose(float(step(x, y)), float(ref), rtol=1e-6)
    _assert_same_state(eager_model, model, dict(rtol=1e-6, atol=1e-7))
    assert why in step.explain() and step.stats["eager"] == 2 and step.stats["replays"] == 0
    assert "[shardflow.compile] eager" in capsys.readouterr().err
    strict = compile_step(model, sf.optim.SGD(model.parameters(), lr=0.1), loss_fn, fullgraph=True)
    with pytest.raises(RuntimeError, match="fullgraph=True"):
        strict(*_batch("mlp", 0))


def test_module_state_changed_outside_ops_runs_eagerly():
    """BatchNorm in training mode counts batches in Python (not an op): the trace cannot see
    it, so the step runs eagerly, saying why; in eval mode the same model compiles."""
    def build():
        sf.manual_seed(0)
        return sf.nn.Sequential(sf.nn.Conv2d(3, 4, 3, padding=1), sf.nn.BatchNorm2d(4),
                                sf.nn.ReLU(), sf.nn.Flatten(), sf.nn.Linear(256, 5))

    a, b = build(), build()
    eager = compile_step(a, sf.optim.SGD(a.parameters(), lr=0.1), _ce)
    step = compile_step(b, sf.optim.SGD(b.parameters(), lr=0.1), _ce)
    for mode in ("train", "eval"):
        for m in (a, b):
            m.train(mode == "train")
        for s in range(3):
            x, y = _batch("cnn", s)
            np.testing.assert_allclose(float(step(x, y)), float(eager.eager_step(x, y)),
                                       rtol=1e-6)
        _assert_same_state(a, b, dict(rtol=1e-5, atol=1e-6))
    assert "buffer '1.num_batches_tracked' was changed by Python code" in step.explain()
    assert step.stats["traces"] == 2 and step.stats["eager"] == 2 and step.stats["replays"] == 2


def test_parameter_hooks_run_in_the_plan():
    """Tensor hooks change the gradient before .grad is set, post-accumulate-grad hooks see
    the final .grad: at the engine's moments, in every replay."""
    eager_model, model, eager, step = _pair("mlp")
    for m in (eager_model, model):
        m[0].weight.register_hook(lambda g: g * 2.0)
    seen = []
    model[2].weight.register_post_accumulate_grad_hook(
        lambda p: seen.append(float(np.abs(p.grad.numpy()).sum())))
    for s in range(3):
        x, y = _batch("mlp", s)
        np.testing.assert_allclose(float(step(x, y)), float(eager.eager_step(x, y)), rtol=1e-6)
        _assert_same_state(eager_model, model, dict(rtol=1e-5, atol=1e-6))
    assert step.stats["traces"] == 1 and step.stats["replays"] == 2 and step.stats["eager"] == 0
    # the compile call runs the step twice (traced eager, then the checked replay)
    assert len(seen) == 4 and seen[0] == pytest.approx(seen[1]) and seen[0] > 0
    assert seen[-1] == pytest.approx(float(np.abs(model[2].weight.grad.numpy()).sum()))


def test_parameter_outside_the_optimizer_runs_eagerly():
    sf.manual_seed(0)
    model, twin = _mlp(), _mlp()
    twin.load_state_dict({k: sf.tensor(v.numpy().copy()) for k, v in model.state_dict().items()})
    step = compile_step(model, sf.optim.SGD(model[0].parameters(), lr=0.1), _ce)
    twin_opt = sf.optim.SGD(twin[0].parameters(), lr=0.1)
    for s in range(2):
        step(*_batch("mlp", s))
        twin_opt.zero_grad(set_to_none=True)  # the eager step by hand
        _ce(twin, *_batch("mlp", s)).backward()
        twin_opt.step()
    assert step.stats["eager"] == 1 and "not in the optimizer" in step.explain()
    # the layers outside the optimizer accumulate .grad over both steps, as without compile
    _assert_same_state(twin, model, dict(rtol=1e-6, atol=1e-7))


def test_compile_step_rejects_bad_arguments():
    model = _mlp()
    with pytest.raises(TypeError, match="loss_fn"):
        compile_step(model, sf.optim.SGD(model.parameters(), lr=0.1), None)
    with pytest.raises(TypeError, match="optimizer"):
        compile_step(model, object(), _ce)


def test_forward_backward_only_leaves_gradients_for_the_caller():
    """``compile_step(model, None, loss_fn)``: no optimizer; the caller clips and steps."""
    eager_model, model, _, _ = _pair("mlp")
    step = compile_step(model, None, _ce)
    opt_e = sf.optim.SGD(eager_model.parameters(), lr=0.1)
    opt_c = sf.optim.SGD(model.parameters(), lr=0.1)
    for s in range(4):
        x, y = _batch("mlp", s)
        opt_e.zero_grad(set_to_none=True)
        ref = _ce(eager_model, x, y)
        ref.backward()
        loss = step(x, y)
        np.testing.assert_allclose(float(loss), float(ref), rtol=1e-6)
        _assert_same_state(eager_model, model, dict(rtol=1e-5, atol=1e-6))  # .grad equal
        for m, o in ((eager_model, opt_e), (model, opt_c)):
            sf.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            o.step()
        _assert_same_state(eager_model, model, dict(rtol=1e-5, atol=1e-6))
    assert step.stats["traces"] == 1 and step.stats["replays"] == 3, step.explain()
    assert "no optimizer (gradients left in .grad)" in step.explain()
    with pytest.raises(TypeError, match="forward and backward only"):
        compile_step(model, object(), _ce)
