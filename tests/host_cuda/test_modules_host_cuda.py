"""Training pieces on ``device="cuda"`` with CuPy's host stand-in, each against the same run on
the CPU: optimizers (and their state dicts), gradient clipping, AMP's GradScaler, recurrent and
convolutional layers (lazy ones too), checkpoints with ``map_location``; and the clear refusals
where a feature is CPU-only (quantization) or falls back (``compile`` runs GPU calls eagerly)."""

import numpy as np
import pytest

import shardflow as sf
from shardflow import nn, optim


def _host(t):
    return t.detach().cpu().numpy()


def _twin_runs(build, step_fn, steps=3):
    """``build()`` on cpu and on cuda from the same seed; ``step_fn(model, device)`` a few times;
    the parameters after each run, as host arrays."""
    out = {}
    for dev in ("cpu", "cuda"):
        sf.manual_seed(0)
        model = build().to(dev)
        state = {}
        for i in range(steps):
            sf.manual_seed(100 + i)
            step_fn(model, dev, state)
        out[dev] = [_host(p) for p in model.parameters()]
    return out["cpu"], out["cuda"]


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


OPTIMIZERS = [("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
              ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1}),
              ("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01, "amsgrad": True}),
              ("RMSprop", {"lr": 0.01, "momentum": 0.5}), ("Adagrad", {"lr": 0.1}),
              ("Adadelta", {"lr": 1.0})]


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[f"{n}{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_optimizer_steps_on_cuda_match_cpu(name, kw):
    def step(model, dev, state):
        opt = state.setdefault("opt", getattr(optim, name)(model.parameters(), **kw))
        x = sf.randn(5, 4, device=dev)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
    cpu, gpu = _twin_runs(_mlp, step)
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)


def test_optimizer_state_dict_moves_to_the_parameters_device():
    model = _mlp()
    opt = optim.AdamW(model.parameters(), lr=0.01)
    model(sf.randn(2, 4)).sum().backward()
    opt.step()
    sd = opt.state_dict()  # CPU state
    model.to("cuda")
    opt2 = optim.AdamW(model.parameters(), lr=0.01)
    opt2.load_state_dict(sd)
    for st in opt2.state.values():
        assert st["exp_avg"].device.type == "cuda" and st["exp_avg_sq"].device.type == "cuda"
    model(sf.randn(2, 4, device="cuda")).sum().backward()
    opt2.step()


def test_lstm_and_gru_on_cuda_match_cpu():
    for cls in (nn.LSTM, nn.GRU):
        def step(model, dev, state):
            x = sf.randn(3, 5, 4, device=dev)
            out, _ = model(x)
            out.pow(2).mean().backward()
            for p in model.parameters():
                p.data -= 0.1 * p.grad
                p.grad = None
        cpu, gpu = _twin_runs(lambda: cls(4, 6, num_layers=2, batch_first=True), step, steps=2)
        for c, g in zip(cpu, gpu):
            np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5)


def test_cnn_with_lazy_linear_on_cuda_matches_cpu():
    def build():
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.LazyLinear(2))

    def step(model, dev, state):
        loss = nn.functional.cross_entropy(model(sf.randn(2, 3, 8, 8, device=dev)),
                                           sf.tensor([0, 1], device=dev))
        loss.backward()
        for p in model.parameters():
            p.data -= 0.1 * p.grad
            p.grad = None
    cpu, gpu = _twin_runs(build, step, steps=2)
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-4, atol=1e-5)


def test_grad_scaler_on_cuda_matches_cpu():
    def step(model, dev, state):
        opt = state.setdefault("opt", optim.SGD(model.parameters(), lr=0.1))
        scaler = state.setdefault("scaler", sf.amp.GradScaler(dev, init_scale=2.0**8))
        loss = model(sf.randn(4, 4, device=dev)).pow(2).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
    cpu, gpu = _twin_runs(_mlp, step)
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)


def test_checkpoint_of_a_cuda_model_loads_on_cpu_and_back(tmp_path):
    model = _mlp().to("cuda")
    sf.save(model.state_dict(), tmp_path / "m.pt")
    on_cpu = sf.load(tmp_path / "m.pt", map_location="cpu")
    assert {t.device.type for t in on_cpu.values()} == {"cpu"}
    back = sf.load(tmp_path / "m.pt", map_location="cuda")
    assert {t.device.type for t in back.values()} == {"cuda"}
    fresh = _mlp()
    fresh.load_state_dict(on_cpu)
    for (k, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        np.testing.assert_array_equal(_host(a), _host(b), err_msg=k)


def test_compile_runs_gpu_calls_eagerly_and_says_so():
    model = _mlp().to("cuda")
    compiled = sf.compile(model)
    x = sf.randn(2, 4, device="cuda")
    np.testing.assert_array_equal(_host(compiled(x)), _host(model(x)))
    assert any("GPU" in line for line in compiled.explain().splitlines())


def test_quantization_refuses_a_gpu_model_with_the_fix():
    from shardflow.ao.quantization import quantize_dynamic

    model = _mlp().to("cuda")
    with pytest.raises(RuntimeError, match=r"on cuda:0.*quantization runs on the CPU.*model\.cpu\(\)"):
        quantize_dynamic(model)
