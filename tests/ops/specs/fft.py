"""Specs for ``torch.fft`` (shardflow/ops/fft_ops.py).

A complex output is compared through ``view_as_real`` (real pairs: the table's losses are
real, as torch's ``backward`` needs), and a complex input is built inside the spec as
``complex(a, b)`` from two real inputs, so the finite differences perturb real and imaginary
parts and the gradients of both are checked against torch. ``n`` / ``s`` both pad and trim;
every ``norm`` appears. float32 and float64: torch's CPU FFT has no bfloat16.
"""

import torch

from shardflow.testing.opspec import Arg, OpSpec

NO_BF16 = ("float32", "float64")
NOTE = "torch's CPU FFT has no bfloat16 kernels"


def F(m, name):
    """``torch.fft.<name>``; shardflow's op ``fft_<name>`` (``shardflow.fft`` re-exports it as
    the same function, checked in test_fft.py)."""
    return getattr(m.fft, name) if m is torch else getattr(m, "fft_" + name)


def _f(name, fn, inputs, **kw):
    kw.setdefault("notes", NOTE)
    return OpSpec(name, fn, inputs, dtypes=NO_BF16, **kw)


def _r(m, y):
    """Real pairs of a complex result (torch's ifft of a real input and ihfft return lazily
    conjugated tensors, which view_as_real refuses until resolved)."""
    return m.view_as_real(y.resolve_conj())


def _c(m, a, b):
    return m.complex(a, b)


SPECS = [
    # ---------------------------------------------------------------- complex to complex
    _f("fft_real_input", lambda m, a: _r(m, F(m, "fft")(a)), [Arg((3, 8))]),
    _f("fft_complex_n_pad_ortho", lambda m, a, b: _r(m, F(m, "fft")(_c(m, a, b), n=10, dim=0, norm="ortho")),
       [Arg((6, 2)), Arg((6, 2))]),
    _f("fft_trim_forward", lambda m, a: _r(m, F(m, "fft")(a, n=5, norm="forward")), [Arg((2, 7))]),
    _f("ifft_complex", lambda m, a, b: _r(m, F(m, "ifft")(_c(m, a, b))), [Arg((2, 6)), Arg((2, 6))]),
    _f("ifft_real_n_ortho", lambda m, a: _r(m, F(m, "ifft")(a, n=4, dim=-2, norm="ortho")), [Arg((5, 3))]),
    _f("fft2_s_forward", lambda m, a, b: _r(m, F(m, "fft2")(_c(m, a, b), s=(4, 3), norm="forward")),
       [Arg((2, 3, 5)), Arg((2, 3, 5))]),
    _f("ifft2_dims", lambda m, a: _r(m, F(m, "ifft2")(a, dim=(0, 2))), [Arg((4, 2, 3))]),
    _f("fftn_all_dims", lambda m, a, b: _r(m, F(m, "fftn")(_c(m, a, b))), [Arg((3, 4)), Arg((3, 4))]),
    _f("fftn_s_last_dims_ortho", lambda m, a: _r(m, F(m, "fftn")(a, s=(6, 2), norm="ortho")), [Arg((2, 4, 3))]),
    _f("ifftn_dim", lambda m, a, b: _r(m, F(m, "ifftn")(_c(m, a, b), dim=(1,), norm="forward")),
       [Arg((2, 5)), Arg((2, 5))]),
    # ---------------------------------------------------------------- real to half spectrum and back
    _f("rfft", lambda m, a: _r(m, F(m, "rfft")(a)), [Arg((3, 8))]),
    _f("rfft_odd_n_dim0_ortho", lambda m, a: _r(m, F(m, "rfft")(a, n=7, dim=0, norm="ortho")), [Arg((5, 2))]),
    _f("rfft_trim_forward", lambda m, a: _r(m, F(m, "rfft")(a, n=4, norm="forward")), [Arg((6,))]),
    _f("irfft_default_n", lambda m, a, b: F(m, "irfft")(_c(m, a, b)), [Arg((2, 5)), Arg((2, 5))]),
    _f("irfft_odd_n_ortho", lambda m, a, b: F(m, "irfft")(_c(m, a, b), n=7, norm="ortho"), [Arg((4,)), Arg((4,))]),
    _f("irfft_pad_forward_dim0", lambda m, a, b: F(m, "irfft")(_c(m, a, b), n=12, dim=0, norm="forward"),
       [Arg((3, 2)), Arg((3, 2))]),
    _f("irfft_real_input_trim", lambda m, a: F(m, "irfft")(a, n=4), [Arg((2, 6))]),
    _f("rfft2", lambda m, a: _r(m, F(m, "rfft2")(a)), [Arg((2, 4, 6))]),
    _f("irfft2_s_ortho", lambda m, a, b: F(m, "irfft2")(_c(m, a, b), s=(4, 5), norm="ortho"),
       [Arg((3, 3)), Arg((3, 3))]),
    _f("rfftn_s", lambda m, a: _r(m, F(m, "rfftn")(a, s=(3, 4, 5))), [Arg((2, 3, 6))]),
    _f("irfftn_dims", lambda m, a, b: F(m, "irfftn")(_c(m, a, b), dim=(0, 1), norm="forward"),
       [Arg((3, 4, 2)), Arg((3, 4, 2))]),
    _f("rfftn_irfftn_roundtrip", lambda m, a: F(m, "irfftn")(F(m, "rfftn")(a), s=a.shape), [Arg((3, 5))]),
    # ---------------------------------------------------------------- Hermitian signals
    _f("hfft", lambda m, a, b: F(m, "hfft")(_c(m, a, b)), [Arg((2, 5)), Arg((2, 5))]),
    _f("hfft_n_ortho", lambda m, a, b: F(m, "hfft")(_c(m, a, b), n=7, norm="ortho"), [Arg((4,)), Arg((4,))]),
    _f("ihfft", lambda m, a: _r(m, F(m, "ihfft")(a)), [Arg((2, 6))]),
    _f("ihfft_n_forward", lambda m, a: _r(m, F(m, "ihfft")(a, n=5, dim=0, norm="forward")), [Arg((4, 2))]),
    _f("hfft2_s_forward", lambda m, a, b: F(m, "hfft2")(_c(m, a, b), s=(3, 6), norm="forward"),
       [Arg((2, 3, 4)), Arg((2, 3, 4))]),
    _f("hfftn_all_dims", lambda m, a, b: F(m, "hfftn")(_c(m, a, b)), [Arg((3, 4)), Arg((3, 4))]),
    _f("ihfft2_ortho", lambda m, a: _r(m, F(m, "ihfft2")(a, norm="ortho")), [Arg((2, 3, 5))]),
    _f("ihfftn_s_dim", lambda m, a: _r(m, F(m, "ihfftn")(a, s=(4, 4), dim=(0, 2))), [Arg((3, 2, 5))]),
    # ---------------------------------------------------------------- frequencies and shifts
    OpSpec("fftfreq_rfftfreq", lambda m: (F(m, "fftfreq")(7), F(m, "fftfreq")(8, d=0.5), F(m, "rfftfreq")(9, 2.0),
                                          F(m, "rfftfreq")(4, dtype=m.float64)), [], grad=False, fd=False),
    OpSpec("fftshift_ifftshift", lambda m, a: F(m, "fftshift")(a) + F(m, "ifftshift")(a, dim=1)
           + F(m, "ifftshift")(F(m, "fftshift")(a, dim=(0,)), dim=0), [Arg((5, 4))]),
]
