"""``torch.stft`` / ``torch.istft`` (and ``Tensor.stft`` / ``Tensor.istft``): the short-time
Fourier transform and its inverse, with torch 2.13's signatures, defaults, checks and messages.

Both are compositions of differentiable ops, so the gradients (to the signal and to the window)
come from autograd, double backward included:

``stft(x, n_fft, hop_length=n_fft // 4, win_length=n_fft, window=None (ones), center=True,
pad_mode='reflect', normalized=False, onesided=None, return_complex=None, align_to_window=None)``

1. ``center``: ``x`` padded by ``n_fft // 2`` on both ends with ``pad_mode`` (``F.pad``), so
   frame ``t`` is centred on sample ``t * hop_length``.
2. Frames: ``unfold(-1, n_fft, hop_length)`` -> ``(B, T, n_fft)``, ``T = 1 + (L - n_fft) //
   hop_length`` (``L`` after padding). ``align_to_window=True`` (only with ``center=False``)
   starts frame ``t`` where its window starts (sample ``t * hop - (n_fft - win_length) // 2``),
   so ``T = 1 + (L - win_length) // hop_length``.
3. The window (``win_length`` long, zero-padded on both sides to ``n_fft``, centred) multiplies
   every frame; ``window=None`` is rectangular (torch warns once per process that it leaks).
4. ``fft.rfft`` over each frame (``onesided``, the default for real input and window: ``n_fft
   // 2 + 1`` bins), else ``fft.fft`` (``n_fft`` bins); ``normalized`` uses ``norm='ortho'``
   (times ``n_fft ** -0.5``). Output ``(B?, N, T)``; ``return_complex=False`` (deprecated by
   torch, still accepted with its warning) gives ``view_as_real`` of it, ``(B?, N, T, 2)``. For
   real input and window torch requires ``return_complex`` to be given.

``istft(S, n_fft, hop_length, win_length, window, center=True, normalized=False, onesided=None,
length=None, return_complex=False)``, the least-squares inverse (Griffin & Lim):

1. Frames: ``fft.irfft(S^T, n=n_fft)`` (two-sided input narrowed to the first ``n_fft // 2 + 1``
   bins first), or ``fft.ifft`` when ``return_complex``; ``norm='ortho'`` if ``normalized``.
2. Each frame times the window, overlap-added (``index_add`` at ``t * hop_length + k``) into
   ``n_fft + hop_length * (T - 1)`` samples; the squared window is overlap-added the same way
   (the *envelope*).
3. ``center`` trims ``n_fft // 2`` at the front and (without ``length``) at the back; ``length``
   sets the end, zero-padding past the signal (torch's warning). ``window=None`` is
   rectangular, with torch's once-per-process warning (as ``stft``'s, its own text). Then ``y / envelope``; an
   envelope below 1e-11 anywhere kept fails torch's NOLA check ("window overlap add min").
"""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd import Tensor
from ..autograd.dispatch import register
from ..backend import dtypes
from ..backend.dtypes import _SCALAR_TYPE_NAMES
from ..backend.user_warning import first_time
from ._util import as_tensor_arg

__all__ = ["stft", "istft"]

# torch's TORCH_WARN_ONCE: each of these warnings is given once per process.
def _warn_once(key: str, message: str) -> None:
    if first_time(f"stft_{key}"):
        warnings.warn(message, UserWarning, stacklevel=4)  # past the dispatch wrapper, at the caller


def _ops():
    from .. import ops

    return ops




def _type_name(t: Tensor) -> str:
    return _SCALAR_TYPE_NAMES.get(str(t.dtype).rpartition(".")[2], str(t.dtype))


def _tensor_str(t: Tensor) -> str:
    """``torch.FloatTensor`` / ``torch.cuda.FloatTensor``, as torch's ``toString``."""
    cuda = "cuda." if t.device.type == "cuda" else ""
    return f"torch.{cuda}{_type_name(t)}Tensor"


def _opt(v) -> str:
    return "None" if v is None else str(int(v))


def _stft_repr(x, n_fft, hop, win, window, normalized, onesided, return_complex, align) -> str:
    w = "None" if window is None else f"{_tensor_str(window)}{{{list(window.shape)}}}"
    return (f"stft({_tensor_str(x)}{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={w}, normalized={int(bool(normalized))}, onesided={_opt(onesided)}, "
            f"return_complex={_opt(return_complex)}, align_to_window={_opt(align)}) ")


def _full_window(window, n_fft: int, win_length: int, like: Tensor):
    """The window zero-padded on both sides to ``n_fft`` (centred); None stays None when it
    would be all ones (torch skips the multiplication then)."""
    ops = _ops()
    if win_length == n_fft:
        return window
    if window is None:
        window = ops.ones(win_length, dtype=like.dtype, device=like.device)
    left = (n_fft - win_length) // 2
    return ops.pad(window, (left, n_fft - win_length - left))


@register("stft")
def stft(input, n_fft: int, hop_length=None, win_length=None, window=None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided=None, return_complex=None,
         align_to_window=None) -> Tensor:
    """``torch.stft``: frames of ``n_fft`` samples every ``hop_length``, windowed, Fourier
    transformed: ``(B?, N, T)`` complex (see the module docstring for the algorithm)."""
    ops = _ops()
    x = as_tensor_arg(input)
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    n_fft = int(n_fft)
    if center:  # torch.functional.stft pads a (1, 1, L) / (1, B, L) view, then views it back
        nd, shape = x.ndim, tuple(x.shape)
        x = ops.pad(ops.reshape(x, (1,) * (3 - nd) + shape), (n_fft // 2, n_fft // 2), mode=pad_mode)
        x = ops.reshape(x, tuple(x.shape)[len(x.shape) - nd:] if nd else ())
    hop = n_fft >> 2 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if window is not None:
        window = as_tensor_arg(window, "window")
        if window.device != x.device:
            raise RuntimeError(f"stft input and window must be on the same device but got self on {x.device} "
                               f"and window on {window.device}")
    else:
        _warn_once("window", "A window was not provided. A rectangular window will be applied,which is known to "
                   "cause spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                   "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                   "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    is_complex = x.is_complex() or (window is not None and window.is_complex())
    rc = is_complex if return_complex is None else bool(return_complex)
    if not rc:
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        _warn_once("return_complex", "stft with return_complex=False is deprecated. In a future pytorch release, "
                   "stft will return complex tensors for all inputs, and return_complex=False will raise an "
                   "error.\nNote: you can still call torch.view_as_real on the complex output to recover the old "
                   "return format.")

    def fail(msg):
        rep = _stft_repr(x, n_fft, hop, win, window, normalized, onesided, return_complex, align_to_window)
        raise RuntimeError(rep + ": " + msg)

    if not (x.is_floating_point() or x.is_complex()):
        fail("expected a tensor of floating point or complex values")
    if x.ndim not in (1, 2):
        fail("expected a 1D or 2D tensor")
    frames_in = x if x.ndim == 2 else ops.unsqueeze(x, 0)  # (B, L)
    length = frames_in.shape[1]
    if n_fft <= 0 or n_fft > length:
        fail(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        fail(f"expected a 1D window tensor of size equal to win_length={win}, but got window with size "
             f"{list(window.shape)}")
    full_window = _full_window(window, n_fft, win, x)
    if align_to_window and win < n_fft:  # frame t starts where its window starts: t * hop - left
        left = (n_fft - win) // 2
        frames_in = ops.pad(frames_in, (left, n_fft - win - left))
    frames = ops.unfold(frames_in, -1, n_fft, hop)  # (B, T, n_fft)
    if full_window is not None:
        frames = frames * full_window
    complex_fft = frames.is_complex()
    side = (not complex_fft) if onesided is None else bool(onesided)
    norm = "ortho" if normalized else "backward"
    if complex_fft:
        if side:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = ops.fft_fft(frames, dim=-1, norm=norm)
    elif side:
        out = ops.fft_rfft(frames, dim=-1, norm=norm)
    else:
        out = ops.fft_fft(frames, dim=-1, norm=norm)
    out = ops.transpose(out, 1, 2)  # (B, N, T)
    if x.ndim == 1:
        out = ops.squeeze(out, 0)
    return out if rc else ops.view_as_real(out)


def _istft_repr(x, n_fft, hop, win, window, center, normalized, onesided, length, return_complex) -> str:
    cuda = "CUDA" if x.device.type == "cuda" else "CPU"
    w = "None" if window is None else f"{_tensor_str(window)}{{{list(window.shape)}}}"
    return (f"istft({cuda}{_type_name(x)}Type{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={w}, center={int(bool(center))}, normalized={int(bool(normalized))}, "
            f"onesided={_opt(onesided)}, length={'None' if length is None else length}, "
            f"return_complex={int(bool(return_complex))}) ")


def _overlap_add(frames: Tensor, hop: int) -> Tensor:
    """``(B, T, n)`` frames summed into ``(B, n + hop (T - 1))`` samples, frame ``t`` at
    ``t * hop`` (torch's ``unfold_backward``), as one differentiable ``index_add``."""
    ops = _ops()
    b, t, n = frames.shape
    index = (np.arange(t)[:, None] * hop + np.arange(n)[None, :]).reshape(-1)
    index = ops.tensor(index, dtype=dtypes.int64, device=frames.device)
    out = ops.zeros(b, n + hop * (t - 1), dtype=frames.dtype, device=frames.device)
    return ops.index_add(out, 1, index, ops.reshape(frames, (b, t * n)))


@register("istft")
def istft(input, n_fft: int, hop_length=None, win_length=None, window=None, center: bool = True,
          normalized: bool = False, onesided=None, length=None, return_complex: bool = False) -> Tensor:
    """``torch.istft``: the signal whose ``stft`` is ``input`` (windowed overlap-add divided by
    the squared window's overlap-add; see the module docstring)."""
    ops = _ops()
    x = as_tensor_arg(input)
    n_fft = int(n_fft)
    hop = n_fft >> 2 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if not x.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if window is not None:
        window = as_tensor_arg(window, "window")
    else:
        _warn_once("istft_window", "A window was not provided. A rectangular window will be applied.Please provide "
                   "the same window used by stft to make the inversion lossless.To suppress this warning and use a "
                   "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    real_nd = x.ndim + 1  # torch checks the view_as_real of the input
    if real_nd < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-real_nd}, {real_nd - 1}], but got "
                         f"{-3 if real_nd == 2 else -2})")

    def fail(msg):
        raise RuntimeError(_istft_repr(x, n_fft, hop, win, window, center, normalized, onesided, length,
                                       return_complex) + msg)

    n_frames, fft_size = x.shape[-1], x.shape[-2]
    if x.numel() == 0:
        fail(": input tensor cannot be empty.")
    if real_nd not in (3, 4):
        fail(f": expected a tensor with 3 or 4 dimensions, but got {real_nd}")
    side = fft_size != n_fft if onesided is None else bool(onesided)
    if side and n_fft // 2 + 1 != fft_size:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 "
             f"when onesided=True, but got {fft_size}")
    if not side and n_fft != fft_size:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
             f"onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        fail(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        fail(": expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        fail(": Invalid window shape. window has to be 1D and length of `win_length`")
    real_dtype = dtypes.float64 if x.dtype == dtypes.complex128 else dtypes.float32
    full_window = window if window is not None else ops.ones(win, dtype=real_dtype, device=x.device)
    full_window = _full_window(full_window, n_fft, win, x)
    spec = x if x.ndim == 3 else ops.unsqueeze(x, 0)
    spec = ops.transpose(spec, 1, 2)  # (B, T, N)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if side:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = ops.fft_ifft(spec, dim=-1, norm=norm)  # (B, T, n_fft)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not side:
            spec = ops.narrow(spec, -1, 0, n_fft // 2 + 1)
        frames = ops.fft_irfft(spec, n=n_fft, dim=-1, norm=norm)  # (B, T, n_fft)
    y = _overlap_add(frames * full_window, hop)  # (B, expected_len)
    envelope = _overlap_add(ops.expand(ops.reshape(full_window * full_window, (1, 1, n_fft)),
                                       (1, n_frames, n_fft)), hop)  # (1, expected_len)
    expected_len = n_fft + hop * (n_frames - 1)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + int(length)
    else:
        end = -(n_fft // 2) if center else expected_len
    y = y[:, start:end]
    envelope = envelope[:, start:end]
    if bool((ops.abs(envelope.detach()).min() < 1e-11).item()):
        fail("window overlap add min: 1\n(NOLA check failed: the squared window overlap-added with this "
             "hop_length is zero somewhere in the kept signal; use a window that does not vanish there or a "
             "smaller hop_length)")
    y = y / envelope
    if x.ndim == 2:
        y = ops.squeeze(y, 0)
    if end > expected_len:
        _warn_once("istft_length", "The length of signal is shorter than the length parameter. Result is being "
                   "padded with zeros in the tail. Please check your center and hop_length settings.")
        y = ops.pad(y, (0, end - expected_len))
    return y
