"""``shardflow bench engine``'s peer columns (torch.compile, jax.jit, shardflow.compile_step):
each trains the same model as PyTorch eager (same losses step by step), the flags select
them, and a peer that fails is reported with its reason while the other columns come out.
No timing is asserted (speed lives in the benchmark itself).

torch.compile is checked with the ``aot_eager`` backend: the same capture (dynamo, AOTAutograd
backward, the compiled optimizer step) without inductor's C++ code generation, which costs
20-50 s cold on 2 cores; ``shardflow bench engine --peers torch-compile`` runs inductor."""

import copy
import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from shardflow.bench import engine, engine_jax, engine_torch_compile
from shardflow.bench.workloads import WORKLOADS, Workload, _adamw, _ce, _gpt_loss, _sgd, gpt_mini


def _eager_losses(wl, model, x, y, n):
    opt = wl.make_optimizer(torch, model)
    out = []
    for _ in range(n):
        opt.zero_grad(set_to_none=True)
        loss = wl.loss(torch, model, x, y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def test_peers_flag_names_the_columns():
    assert engine.parse_peers("torch") == ()
    assert engine.parse_peers("all") == engine.PEERS
    assert engine.parse_peers("jax, torch,torch-compile") == ("torch-compile", "jax")
    with pytest.raises(ValueError, match="unknown peer.*tensorflow.*torch-compile, jax, sf-compile"):
        engine.parse_peers("jax,tensorflow")


def test_torch_compile_step_trains_like_eager():
    wl = Workload("tiny", lambda t: t.nn.Sequential(t.nn.Linear(8, 16), t.nn.ReLU(), t.nn.Linear(16, 4)),
                  None, _sgd, _ce, 0)
    torch.manual_seed(0)
    model = wl.build(torch)
    before = copy.deepcopy(model.state_dict())
    x, y = torch.randn(6, 8), torch.randint(0, 4, (6,))
    step = engine_torch_compile.make_step(torch, wl, model, x, y, backend="aot_eager")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = [step().item() for _ in range(3)]
    except Exception as e:  # e.g. a torch build whose dynamo does not support this Python
        pytest.skip(f"torch.compile cannot compile here: {type(e).__name__}: {e}")
    for k, v in model.state_dict().items():  # the column trains a copy
        assert torch.equal(v, before[k]), k
    eager = _eager_losses(wl, model, x, y, 3)
    assert eager[0] != eager[2]  # training moved the loss, so equality below means something
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)


def _tiny_gpt():
    return Workload("tiny gpt", lambda t: gpt_mini(t, n_layer=1, d_model=16, n_head=2, block_size=8, vocab=32),
                    None, _adamw, _gpt_loss, 0)


@pytest.mark.parametrize("key", ["mlp", "cnn", "gpt"])
def test_jax_step_trains_like_pytorch(key):
    """Same initial weights, same batch: the jitted JAX step's losses equal PyTorch eager's
    (forward, gradients and the SGD-momentum / AdamW update rules all take part by step 3).
    gpt is a 1-layer d16 GPT-mini through the same loss code as the benchmark's."""
    ok, why = engine_jax.available()
    if not ok:
        pytest.skip(why)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if key == "gpt":
        wl = _tiny_gpt()
        x, y = rng.integers(0, 32, (2, 8)), rng.integers(0, 32, (2, 8))
        loss_fn, opt = engine_jax.gpt_loss(n_layer=1, n_head=2), "adamw"
    else:
        wl = WORKLOADS[key]
        x, y = wl.make_batch(rng)
        loss_fn, opt = engine_jax.LOSSES[key], engine_jax.OPTIMIZERS[key]
    model = wl.build(torch)
    step = engine_jax.make_train_step(loss_fn, opt, model, x, y)
    jax_losses = [float(step()) for _ in range(3)]
    eager = _eager_losses(wl, model, torch.from_numpy(x), torch.from_numpy(y), 3)
    assert eager[0] != eager[2]
    np.testing.assert_allclose(jax_losses, eager, rtol=2e-5, atol=1e-5)


def test_engine_prints_peer_columns_and_cold_table(tmp_path, capsys):
    out = tmp_path / "engine.json"
    assert engine.main(["--models", "mlp", "--runs", "1", "--steps", "1", "--warmup", "1",
                        "--peers", "jax,sf-compile", "--no-small-op", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    row = json.loads(out.read_text())["workloads"][0]
    for label in (engine_jax.NAME, engine.PEER_LABELS["sf-compile"]):
        assert f"{label} ms" in text.splitlines()[1]  # the header has the column
        # the column has a time, or says why not (jax absent, no compile_step): never a crash
        assert (label in row["ms"]) != (label in row["failed"]), row["failed"]
        if label in row["ms"]:
            assert row["first_step_ms"][label] > 0 and row["compile_s"][label] >= 0
    if engine_jax.NAME in row["failed"]:
        assert "shardflow[bench]" in row["failed"][engine_jax.NAME]
    assert "first step ms" in text and "compile s" in text
    assert set(row["ms"]) >= {"shardflow", "torch"}


@pytest.mark.parametrize("when", ["build", "first step"])
def test_a_failing_peer_is_reported_and_the_others_still_run(monkeypatch, when):
    def make_step(*args, **kwargs):
        if when == "build":
            raise RuntimeError("inductor: no working C++ compiler")

        def step():
            raise RuntimeError("inductor: no working C++ compiler")

        return step

    monkeypatch.setattr(engine_torch_compile, "make_step", make_step)
    row = engine.bench_workload("mlp", runs=1, steps=1, warmup=1, peers=("torch-compile",))
    why = row["failed"][engine_torch_compile.NAME]
    assert "no working C++ compiler" in why
    assert ("cannot build" in why) == (when == "build")
    assert engine_torch_compile.NAME not in row["ms"] and "torch_compile_ms" not in row
    assert row["shardflow_ms"] > 0 and row["torch_ms"] > 0
