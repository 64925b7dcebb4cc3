"""Specs for ``torch.stft`` / ``torch.istft`` (shardflow/ops/spectral.py): forward and backward
against torch (to the signal, the window and the spectrogram) and float64 finite differences.

Complex results are compared through ``view_as_real``; the spectrogram fed to ``istft`` is
``complex(a, b)`` of two real inputs. ``istft``'s windows are ``positive`` so the squared
window's overlap-add (the divisor) stays away from zero. float32 and float64 only: torch's CPU
FFT has no bfloat16. Further cases (align_to_window, pad modes, round trips, messages) are in
tests/ops/test_stft.py.
"""

from shardflow.testing.opspec import Arg, OpSpec

NO_BF16 = ("float32", "float64")
NOTE = "torch's CPU FFT has no bfloat16 kernels"


def _s(name, fn, inputs):
    return OpSpec(name, fn, inputs, dtypes=NO_BF16, notes=NOTE)


SPECS = [
    _s("stft_window_batched", lambda m, x, w: m.view_as_real(
        m.stft(x, 8, hop_length=2, window=w, return_complex=True)), [Arg((2, 20)), Arg((8,))]),
    _s("stft_short_window_two_sided_normalized", lambda m, x, w: m.view_as_real(
        m.stft(x, 8, 3, win_length=6, window=w, center=False, normalized=True, onesided=False,
               return_complex=True)), [Arg((19,)), Arg((6,))]),
    _s("stft_method_real_pairs", lambda m, x: x.stft(6, 2, window=m.ones(6, dtype=x.dtype), pad_mode="constant",
                                                     return_complex=False), [Arg((15,))]),
    _s("istft_window_length", lambda m, a, b, w: m.istft(m.complex(a, b), 8, 2, window=w, length=15),
       [Arg((5, 9)), Arg((5, 9)), Arg((8,), kind="positive")]),
    _s("istft_batched_short_window_normalized", lambda m, a, b, w: m.istft(
        m.complex(a, b), 8, 2, win_length=6, window=w, normalized=True), [Arg((2, 5, 7)), Arg((2, 5, 7)),
                                                                        Arg((6,), kind="positive")]),
    _s("istft_method_two_sided_complex", lambda m, a, b: m.view_as_real(
        m.complex(a, b).istft(6, 2, window=m.ones(6, dtype=a.dtype), onesided=False, center=False,
                              return_complex=True)), [Arg((6, 4)), Arg((6, 4))]),
]
