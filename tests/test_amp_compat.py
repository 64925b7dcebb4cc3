"""``GradScaler`` against ``torch.amp.GradScaler('cpu')`` step by step, and ``autocast``'s
PyTorch surface (it computes in float32 and says so once)."""

import pickle
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

W0 = np.array([[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]], np.float32)
X = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0], [3.0, 1.0, 0.0], [-1.0, 0.0, 1.0]], np.float32)


def _pair(scaler_kwargs, opt="SGD"):
    """The same linear model, optimizer and scaler in shardflow and torch."""
    out = []
    for lib in (sf, torch):
        m = lib.nn.Linear(3, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(W0))
            m.bias.zero_()
        o = getattr(lib.optim, opt)(m.parameters(), lr=0.1)
        out.append((lib, m, o, lib.amp.GradScaler("cpu", **scaler_kwargs)))
    return out


def _iteration(lib, m, o, scaler, poison=None, unscale_first=False, clip=None):
    o.zero_grad()
    loss = m(lib.tensor(X)).pow(2).mean()
    scaler.scale(loss).backward()
    if poison is not None:  # what an overflow in a float16 backward looks like
        m.weight.grad[0, 0] = poison
    if unscale_first:
        scaler.unscale_(o)
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(m.parameters(), clip)
    ret = scaler.step(o)
    scaler.update()
    return ret


def _same_state(s_pair, t_pair):
    (_, ms, _, ss), (_, mt, _, st) = s_pair, t_pair
    assert ss.get_scale() == st.get_scale()
    assert ss._get_growth_tracker() == st._get_growth_tracker()
    assert ss.state_dict() == st.state_dict()
    np.testing.assert_allclose(ms.weight.detach().numpy(), mt.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ms.bias.detach().numpy(), mt.bias.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_scale_multiplies_and_unscale_divides_like_torch():
    s, t = _pair(dict(init_scale=1024.0))
    for lib, m, o, scaler in (s, t):
        loss = m(lib.tensor(X)).sum()
        scaled = scaler.scale(loss)
        assert scaled.item() == pytest.approx(loss.item() * 1024.0, rel=1e-6)
        assert [x.item() for x in scaler.scale([loss, (loss,)])[1]] == [scaled.item()]
        scaled.backward()
    np.testing.assert_allclose(s[1].weight.grad.numpy(), t[1].weight.grad.numpy(), rtol=1e-6)
    s[3].unscale_(s[2])
    t[3].unscale_(t[2])
    np.testing.assert_array_equal(s[1].weight.grad.numpy(), t[1].weight.grad.numpy())


@pytest.mark.parametrize("poison", [float("inf"), float("nan"), float("-inf")])
def test_step_is_skipped_on_inf_or_nan_and_the_scale_backs_off(poison):
    s, t = _pair(dict(init_scale=2.0**10, backoff_factor=0.25))
    w_before = s[1].weight.detach().numpy().copy()
    assert _iteration(*s, poison=poison) is None
    _iteration(*t, poison=poison)
    np.testing.assert_array_equal(s[1].weight.detach().numpy(), w_before)  # optimizer.step skipped
    _same_state(s, t)
    assert s[3].get_scale() == 2.0**8


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # clipping an inf gradient
def test_growth_backoff_sequence_and_training_match_torch():
    # growth every 3 good steps, backoff on the poisoned ones, with Adam and explicit unscale_ + clipping
    s, t = _pair(dict(init_scale=2.0**4, growth_factor=2.0, backoff_factor=0.5, growth_interval=3), opt="Adam")
    plan = [None, None, None, None, float("inf"), None, None, None, float("nan"), None]
    scales = []
    for i, poison in enumerate(plan):
        _iteration(*s, poison=poison, unscale_first=i % 2 == 0, clip=0.5)
        _iteration(*t, poison=poison, unscale_first=i % 2 == 0, clip=0.5)
        _same_state(s, t)
        scales.append(s[3].get_scale())
    assert scales == [16, 16, 32, 32, 16, 16, 16, 32, 16, 16]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_growth_never_makes_the_scale_infinite():
    s, t = _pair(dict(init_scale=3e38, growth_interval=1))
    for lib, m, o, scaler in (s, t):
        o.zero_grad()
        scaler.scale(m(lib.tensor(X)).sum() * 1e-38).backward()  # finite scaled gradients
        scaler.step(o)
        scaler.update()
    _same_state(s, t)
    assert s[3].get_scale() == pytest.approx(3e38, rel=1e-6)  # 6e38 would overflow float32: kept


def test_state_dict_round_trip_and_update_with_new_scale():
    s, t = _pair(dict(init_scale=64.0, growth_interval=2))
    for pair in (s, t):
        _iteration(*pair)
    sd = s[3].state_dict()
    assert sd == t[3].state_dict() and set(sd) == {"scale", "growth_factor", "backoff_factor",
                                                  "growth_interval", "_growth_tracker"}
    fresh, fresh_t = sf.amp.GradScaler("cpu"), torch.amp.GradScaler("cpu")
    fresh.load_state_dict(sd)
    fresh_t.load_state_dict(sd)
    assert fresh.get_scale() == fresh_t.get_scale() == 64.0 and fresh._get_growth_tracker() == 1
    clone = pickle.loads(pickle.dumps(s[3]))
    assert clone.state_dict() == sd
    for pair in (s, t):
        pair[3].scale(sf.ones(1) if pair[0] is sf else torch.ones(1))
        pair[3].update(new_scale=8.0)
    assert s[3].get_scale() == t[3].get_scale() == 8.0
    with pytest.raises(RuntimeError, match="saved from a disabled"):
        fresh.load_state_dict({})


def test_stage_errors_match_torch():
    for lib, m, o, scaler in _pair({}):
        with pytest.raises(AssertionError, match="_scale is None"):
            scaler.step(o)
        scaler.scale(m(lib.tensor(X)).sum()).backward()
        scaler.unscale_(o)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            scaler.unscale_(o)
        scaler.step(o)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            scaler.step(o)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            scaler.step(o, closure=lambda: None)
        scaler.update()
        with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
            lib.amp.GradScaler("cpu", growth_factor=1.0)


@pytest.mark.filterwarnings("ignore:.*CUDA is not available:UserWarning")
def test_cuda_scaler_on_a_cpu_machine_disables_itself_like_torch():
    for lib in (sf, torch):
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
            scaler = lib.amp.GradScaler()  # device='cuda' by default
        assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
        with pytest.warns(FutureWarning, match="cuda.amp.GradScaler"):
            legacy = lib.cuda.amp.GradScaler()
        assert not legacy.is_enabled()
    # disabled: step just steps, scale is the identity
    _, m, o, _ = _pair({})[0]
    with pytest.warns(UserWarning):
        scaler = sf.amp.GradScaler("cuda")
    loss = m(sf.tensor(X)).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    w = m.weight.detach().numpy().copy()
    scaler.step(o)
    scaler.update()
    assert not np.array_equal(m.weight.detach().numpy(), w)


# ---------------------------------------------------------------- autocast
def test_autocast_cpu_region_reports_its_state_and_casts_like_torch():
    a, b = sf.ones(2, 2), sf.ones(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the region really casts
        with sf.autocast("cpu"):
            assert sf.is_autocast_enabled("cpu") and sf.get_autocast_dtype("cpu") == sf.bfloat16
            y = a @ b
    assert not sf.is_autocast_enabled("cpu")
    with torch.autocast("cpu"):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        ty = torch.ones(2, 2) @ torch.ones(2, 2)
    assert str(y.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1] == "bfloat16"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with sf.autocast("cpu", dtype=sf.float16):
            assert sf.get_autocast_dtype("cpu") == sf.float16
        with sf.autocast("cpu", enabled=False):
            assert not sf.is_autocast_enabled("cpu")


def test_autocast_as_a_decorator_and_nested():
    @sf.autocast("cpu")
    def f(x):
        return x * 2, sf.is_autocast_enabled("cpu")

    y, inside = f(sf.ones(2))
    assert inside and y.dtype == sf.float32 and not sf.is_autocast_enabled("cpu")
    with sf.autocast("cpu"):
        with sf.autocast("cpu", enabled=False):
            assert not sf.is_autocast_enabled("cpu")
        assert sf.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        sf.autocast("cpu")(3)


@pytest.mark.filterwarnings("ignore:.*CUDA is not available:UserWarning")
def test_autocast_refusals_and_disabling_match_torch():
    for lib in (sf, torch):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ac = lib.autocast("cuda")
        assert not ac._enabled
        with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
            ac = lib.autocast("cpu", dtype=lib.float32)
        assert not ac._enabled
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(0)
        with pytest.raises(RuntimeError):
            lib.autocast("tpu")
        with pytest.warns(FutureWarning, match="cuda.amp.autocast"):
            lib.cuda.amp.autocast()
        assert lib.is_autocast_enabled() is False  # no argument: CUDA


def test_custom_fwd_casts_inputs_inside_an_enabled_region():
    seen = []

    class Fn:
        @staticmethod
        @sf.amp.custom_fwd(device_type="cpu", cast_inputs=sf.float64)
        def forward(ctx, x):
            seen.append((x.dtype, sf.is_autocast_enabled("cpu")))
            return x

    class Ctx:
        pass

    Fn.forward(Ctx(), sf.ones(2))
    with sf.autocast("cpu"):
        Fn.forward(Ctx(), sf.ones(2))
    # outside a region: untouched; inside: floating inputs cast to cast_inputs, and forward
    # runs with autocast disabled (PyTorch's custom_fwd)
    assert seen == [(sf.float32, False), (sf.float64, False)]


@pytest.mark.parametrize("path", ["cuda.amp.autocast", "cuda.amp.GradScaler", "cpu.amp.autocast", "cpu.amp.GradScaler"])
def test_deprecated_amp_spellings_warn_torch_s_exact_text(path):
    """``torch.cuda.amp.GradScaler(enabled=False)`` (milesial/Pytorch-UNet's ``train.py``) and
    the other three legacy spellings warn torch's FutureWarning word for word (a program's
    ``filterwarnings(message=...)`` written for torch's text then matches), with
    ``torch.``'s names, as the other deprecations do (``nn.utils.weight_norm``)."""
    messages = []
    for lib in (torch, sf):
        target = lib
        for part in path.split("."):
            target = getattr(target, part)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            target(enabled=False)
        messages.append([(w.category, str(w.message)) for w in caught if w.category is FutureWarning])
    assert messages[1] == messages[0] and len(messages[0]) == 1
