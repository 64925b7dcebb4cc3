"""``torch.stft`` / ``torch.istft`` (shardflow/ops/spectral.py) against torch 2.13: values and
gradients (to the signal, the window and the spectrogram) over n_fft / hop / win / center /
normalized / onesided / pad_mode / align_to_window, round trips, the Tensor methods, warnings
and torch's error messages."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.backend import user_warning

RNG = np.random.default_rng(0)
SIGNAL = RNG.standard_normal((2, 37))

STFT_CASES = [
    dict(n_fft=8),
    dict(n_fft=8, hop_length=3, win_length=6, window="hann"),
    dict(n_fft=9, normalized=True, onesided=False, center=False, window="hann"),
    dict(n_fft=8, win_length=6, center=False, align_to_window=True, window="hann"),  # frames in bounds: torch reads past the signal otherwise
    dict(n_fft=10, hop_length=4, pad_mode="constant", normalized=True, window="hann"),
    dict(n_fft=6, hop_length=1, pad_mode="replicate", return_complex=False),
]


def _windows(kw):
    """(torch window, shardflow window) leaves that require grad, or (None, None)."""
    if kw.pop("window", None) is None:
        return None, None
    w = np.hanning(kw.get("win_length", kw["n_fft"]) + 2)[1:-1]
    return torch.tensor(w, requires_grad=True), sf.tensor(w, requires_grad=True)


def _loss(out, lib, complex_out):
    """A real loss that depends on both parts and the magnitude."""
    if not complex_out:
        return (out * out).sum() + out.sum()
    return out.abs().sum() + (out.real * 0.5).sum() - out.imag.sum()


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_values_and_gradients_match_torch(case, batched):
    kw = dict(STFT_CASES[case])
    rc = kw.pop("return_complex", True)
    tw, sw = _windows(kw)
    x = SIGNAL if batched else SIGNAL[0]
    tx, sx = torch.tensor(x, requires_grad=True), sf.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.stft(tx, window=tw, return_complex=rc, **kw)
        got = sf.stft(sx, window=sw, return_complex=rc, **kw)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
    _loss(want, torch, rc).backward()
    _loss(got, sf, rc).backward()
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), atol=1e-10)
    if tw is not None:
        np.testing.assert_allclose(sw.grad.numpy(), tw.grad.numpy(), atol=1e-10)


def test_stft_of_complex_input_and_complex_window_is_two_sided():
    z = SIGNAL[0] + 1j * SIGNAL[1]
    w = np.hanning(8) * np.exp(1j * np.arange(8) / 3)
    for x, win in ((z, None), (SIGNAL[0], w)):
        tw = None if win is None else torch.tensor(win)
        sw = None if win is None else sf.tensor(win)
        want = torch.stft(torch.tensor(x), 8, 2, window=tw)  # return_complex defaults to True here
        got = sf.stft(sf.tensor(x), 8, 2, window=sw)
        assert tuple(got.shape) == tuple(want.shape) == (8, 19)
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
        with pytest.raises(RuntimeError, match="Cannot have onesided output if window or input is complex"):
            sf.stft(sf.tensor(x), 8, window=sw, onesided=True)


def test_stft_float32_gives_complex64_and_tensor_methods():
    x = SIGNAL.astype(np.float32)
    w = np.hanning(16).astype(np.float32)
    got = sf.tensor(x).stft(16, 4, window=sf.tensor(w), return_complex=True)
    want = torch.tensor(x).stft(16, 4, window=torch.tensor(w), return_complex=True)
    assert got.dtype == sf.complex64
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
    back = got.istft(16, 4, window=sf.tensor(w), length=37)
    assert back.dtype == sf.float32
    np.testing.assert_allclose(back.numpy(), x, atol=1e-5)


def test_return_complex_rules_and_warnings_follow_torch(monkeypatch):
    x = sf.tensor(SIGNAL[0])
    msg = ("stft requires the return_complex parameter be given for real inputs, and will further require that "
           "return_complex=True in a future PyTorch release.")
    for rc in ({}, {"return_complex": None}):
        monkeypatch.setattr(user_warning, "_given", set())
        with pytest.raises(RuntimeError) as got, pytest.warns(UserWarning, match="A window was not provided"):
            sf.stft(x, 8, **rc)
        with pytest.raises(RuntimeError) as want:
            torch.stft(torch.tensor(SIGNAL[0]), 8, **rc)
        assert str(got.value) == str(want.value) == msg
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        out = sf.stft(x, 8, window=sf.ones(8), return_complex=False)
    assert tuple(out.shape) == (5, 19, 2)
    with warnings.catch_warnings():  # once per process, as torch's TORCH_WARN_ONCE
        warnings.simplefilter("error")
        sf.stft(x, 8, window=sf.ones(8), return_complex=False)
        sf.stft(x, 8, return_complex=True)  # the window warning was given above


@pytest.mark.parametrize("args", [
    dict(n_fft=30, center=False), dict(n_fft=8, hop_length=0), dict(n_fft=8, win_length=9),
    dict(n_fft=8, window=np.ones(7)), dict(n_fft=8, dtype="int64"), dict(n_fft=8, shape=(2, 2, 20)),
    dict(n_fft=8, align_to_window=True),
])
def test_stft_errors_match_torch(args):
    args = dict(args)
    shape, dtype = args.pop("shape", (20,)), args.pop("dtype", "float32")
    x = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    window = args.pop("window", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as want:
            torch.stft(torch.tensor(x), return_complex=True, window=None if window is None else torch.tensor(window,
                       dtype=torch.float32), **args)
        with pytest.raises(RuntimeError) as got:
            sf.stft(sf.tensor(x), return_complex=True, window=None if window is None else sf.tensor(window,
                    dtype=sf.float32), **args)
    assert str(got.value) == str(want.value)


ISTFT_CASES = [
    dict(n_fft=8),
    dict(n_fft=8, hop_length=3, win_length=6, window="hann", length=33),
    dict(n_fft=9, hop_length=2, normalized=True, onesided=False, window="hann"),
    dict(n_fft=8, hop_length=2, center=False, window="hann"),
    dict(n_fft=8, hop_length=2, window="hann", length=45),
    dict(n_fft=8, hop_length=2, onesided=False, return_complex=True, window="hann"),
]


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("case", range(len(ISTFT_CASES)))
def test_istft_values_and_gradients_match_torch(case, batched):
    kw = dict(ISTFT_CASES[case])
    rc = kw.pop("return_complex", False)
    tw, sw = _windows(kw)
    onesided = kw.get("onesided", True)
    spec_kw = dict(n_fft=kw["n_fft"], hop_length=kw.get("hop_length"), win_length=kw.get("win_length"),
                   center=kw.get("center", True), normalized=kw.get("normalized", False), onesided=onesided)
    x = SIGNAL if batched else SIGNAL[0]
    if rc:
        x = x + 0.5j * x[..., ::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = torch.stft(torch.tensor(x), window=None if tw is None else tw.detach(), return_complex=True,
                          **spec_kw)
        # a perturbed spectrogram (not an exact stft) so that the least-squares division matters
        s = spec.numpy() * (1 + 0.1 * RNG.standard_normal(spec.shape))
        ts, ss = torch.tensor(s, requires_grad=True), sf.tensor(s, requires_grad=True)
        want = torch.istft(ts, window=tw, return_complex=rc, **kw)
        got = sf.istft(ss, window=sw, return_complex=rc, **kw)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
    if kw.get("length") is None and kw.get("center", True):  # the round trip (centred frames cover x)
        inv = sf.istft(sf.tensor(spec.numpy()), window=None if sw is None else sw.detach(), return_complex=rc,
                       length=x.shape[-1], **kw)
        np.testing.assert_allclose(inv.numpy(), x, atol=1e-12)
    weights = np.linspace(-1, 1, want.shape[-1])
    _loss(want * torch.tensor(weights), torch, rc).backward()
    _loss(got * sf.tensor(weights), sf, rc).backward()
    np.testing.assert_allclose(ss.grad.numpy(), ts.grad.numpy(), atol=1e-10)
    if tw is not None:
        np.testing.assert_allclose(sw.grad.numpy(), tw.grad.numpy(), atol=1e-10)


def test_istft_nola_check_matches_torch():
    """A periodic Hann window is 0 at its first sample: without centring the first output
    sample has a zero envelope, which torch refuses."""
    spec = torch.stft(torch.tensor(SIGNAL[0]), 8, 2, window=torch.hann_window(8, dtype=torch.float64),
                      center=False, return_complex=True)
    with pytest.raises(RuntimeError) as want:
        torch.istft(spec, 8, 2, window=torch.hann_window(8, dtype=torch.float64), center=False)
    with pytest.raises(RuntimeError) as got:
        sf.istft(sf.tensor(spec.numpy()), 8, 2, window=sf.hann_window(8, dtype=sf.float64), center=False)
    assert str(got.value).startswith(str(want.value).split("\n")[0])
    assert str(want.value).split("\n")[0].endswith("window overlap add min: 1")
    y = sf.istft(sf.tensor(spec.numpy()), 8, 2, window=sf.hann_window(8, dtype=sf.float64), center=True)
    assert tuple(y.shape) == (28,)  # centring trims the vanishing ends: no error


def test_istft_length_past_the_signal_pads_with_a_warning(monkeypatch):
    monkeypatch.setattr(user_warning, "_given", set())
    spec = sf.stft(sf.tensor(SIGNAL[0]), 8, window=sf.ones(8), return_complex=True)
    with pytest.warns(UserWarning, match="The length of signal is shorter than the length parameter"):
        y = sf.istft(spec, 8, window=sf.ones(8), length=50)
    assert tuple(y.shape) == (50,)
    np.testing.assert_allclose(y.numpy()[:37], SIGNAL[0], atol=1e-12)
    assert not y.numpy()[40:].any()


@pytest.mark.parametrize("args", [
    dict(real=True), dict(n_fft=10), dict(onesided=False), dict(hop_length=9), dict(win_length=9),
    dict(window=np.ones(7)), dict(empty=True), dict(extra_dims=2), dict(return_complex=True),
    dict(window=np.ones(8) + 0j), dict(one_dim=True),
])
def test_istft_errors_match_torch(args):
    args = dict(args)
    spec = torch.stft(torch.tensor(SIGNAL[0], dtype=torch.float32), 8, window=torch.hann_window(8),
                      return_complex=True)
    if args.pop("real", False):
        spec = spec.real
    if args.pop("empty", False):
        spec = spec[:, :0]
    if args.pop("one_dim", False):
        spec = spec[0]
    for _ in range(args.pop("extra_dims", 0)):
        spec = spec[None]
    window = args.pop("window", None)
    args.setdefault("n_fft", 8)
    with pytest.raises((RuntimeError, IndexError)) as want:
        torch.istft(spec, window=None if window is None else torch.tensor(window), **args)
    with pytest.raises((RuntimeError, IndexError)) as got:
        sf.istft(sf.tensor(spec.numpy()), window=None if window is None else sf.tensor(window), **args)
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)


def test_double_backward_through_stft_and_istft_matches_torch():
    """create_graph=True: the gradient's gradient (to the window) through both transforms."""
    w = np.hanning(10)[1:-1]
    results = []
    for m in (torch, sf):
        x, win = m.tensor(SIGNAL[0], requires_grad=True), m.tensor(w, requires_grad=True)
        spec = m.stft(x, 8, 2, window=win, return_complex=True)
        y = m.istft(spec * 1.5, 8, 2, window=win, length=37)
        loss = (spec.abs() ** 2).sum() + (y ** 3).sum()
        (g,) = m.autograd.grad(loss, x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), win)
        results.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], atol=1e-10)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-10, atol=1e-9)


def test_istft_without_window_warns_once_as_torch(monkeypatch):
    """torch's istft gives its own once-per-process warning for ``window=None`` (the
    inversion is lossless only with stft's window); shardflow gave none."""
    monkeypatch.setattr(user_warning, "_given", set())
    spec = torch.stft(torch.tensor(SIGNAL[0]), 8, window=torch.ones(8), return_complex=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = sf.istft(sf.tensor(spec.numpy()), 8)
        sf.istft(sf.tensor(spec.numpy()), 8)
    assert [str(w.message) for w in caught] == [
        "A window was not provided. A rectangular window will be applied.Please provide the same window used by "
        "stft to make the inversion lossless.To suppress this warning and use a rectangular window, explicitly set "
        "`window=torch.ones(n_fft, device=<device>)`."]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.istft(spec, 8)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
