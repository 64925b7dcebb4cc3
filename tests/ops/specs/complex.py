"""Specs for complex tensors (shardflow/ops/complex_ops.py, and the complex paths of
arithmetic, abs and casts). The spec harness feeds real inputs and compares real outputs, so
every spec builds its complex values inside (``view_as_complex``, ``complex``, ``polar``) and
returns real ones (``view_as_real``, ``real``, ``imag``, ``abs``, ``angle``): the backward
pass then runs through the complex gradients (PyTorch's conjugate-Wirtinger convention) and
is compared with torch's and with float64 finite differences of the real function.

Float32 and float64 only: torch has no complex dtype for bfloat16 (``view_as_complex`` and
``polar`` refuse it), and shardflow refuses it the same way.
"""

from shardflow.testing.opspec import Arg, OpSpec

C = ("float32", "float64")
PAIRS = Arg((3, 4, 2))


def z(m, a):
    return m.view_as_complex(a)


def precompute_freqs_cis(torch, dim, end, theta=10000.0):
    """Llama's, verbatim (torch.outer of an arange and the frequencies, then torch.polar)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(torch, xq, xk, freqs_cis):
    """Llama's apply_rotary_emb, verbatim (``xq.float()`` left out so the float64 axis
    stays float64)."""
    xq_ = torch.view_as_complex(xq.reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def rotary(m, q, k):
    freqs_cis = precompute_freqs_cis(m, 8, 6)[1:5].to(m.complex128 if q.dtype == m.float64 else m.complex64)
    return apply_rotary_emb(m, q, k, freqs_cis)


def rotary_learned_freqs(m, q, t):
    """Rotary with the angles as an input, so polar's angle gradient is checked too."""
    freqs_cis = m.polar(m.ones_like(t), t)  # (T, D/2)
    q_ = m.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))  # (B, T, H, D/2)
    return m.view_as_real(q_ * reshape_for_broadcast(freqs_cis, q_)).flatten(3)


SPECS = [
    OpSpec("complex_view_roundtrip_mul", lambda m, a, b: m.view_as_real(z(m, a) * z(m, b)), [PAIRS, Arg((3, 4, 2))], dtypes=C),
    OpSpec("complex_mul_broadcast", lambda m, a, b: m.view_as_real(z(m, a) * z(m, b)), [PAIRS, Arg((4, 2))], dtypes=C),
    OpSpec("complex_div", lambda m, a, b: m.view_as_real(z(m, a) / m.polar(b, a[..., 0])), [PAIRS, Arg((3, 4), kind="positive")], dtypes=C),
    OpSpec("complex_reciprocal", lambda m, r, t: m.view_as_real(m.polar(r, t).reciprocal()), [Arg((5,), kind="positive"), Arg((5,))], dtypes=C),
    OpSpec("complex_add_sub_real_tensor", lambda m, a, b: m.view_as_real(z(m, a) + b - z(m, a) * 0.5), [PAIRS, Arg((3, 4))], dtypes=C),
    OpSpec("complex_times_python_complex", lambda m, a: m.view_as_real(z(m, a) * (1.5 - 2j) - 1j), [PAIRS], dtypes=C),
    OpSpec("complex_neg_sum", lambda m, a: m.view_as_real((-z(m, a)).sum(0)), [PAIRS], dtypes=C),
    OpSpec("polar", lambda m, r, t: m.view_as_real(m.polar(r, t)), [Arg((3, 4), kind="positive"), Arg((3, 4))], dtypes=C),
    OpSpec("polar_broadcast", lambda m, r, t: m.view_as_real(m.polar(r, t)), [Arg((4,), kind="positive"), Arg((3, 4))], dtypes=C),
    OpSpec("complex_from_parts", lambda m, a, b: m.view_as_real(m.complex(a, b) * m.complex(b, a)), [Arg((3, 4)), Arg((3, 4))], dtypes=C),
    OpSpec("complex_real_imag", lambda m, a, b: ((m.complex(a, b) ** 2).real, m.imag(m.complex(a, b) * m.complex(b, a))), [Arg((3, 4)), Arg((3, 4))], dtypes=C),
    OpSpec("complex_real_functional", lambda m, a: m.real(z(m, a) * z(m, a)), [PAIRS], dtypes=C),
    OpSpec("real_of_real_is_identity", lambda m, a: m.real(a) * 2, [Arg((3,))], dtypes=C),
    OpSpec("complex_conj", lambda m, a, b: m.view_as_real(m.conj(z(m, a)) * z(m, b)), [PAIRS, Arg((3, 4, 2))], dtypes=C),
    OpSpec("complex_conj_physical_method", lambda m, a: m.view_as_real(m.conj_physical(z(m, a)) + z(m, a).conj() * 2), [PAIRS], dtypes=C),
    OpSpec("complex_resolve", lambda m, a: m.view_as_real(m.resolve_neg(m.resolve_conj(z(m, a))) * (3.0 if m.is_conj(a) else 2.0)), [PAIRS], dtypes=C),
    OpSpec("complex_abs", lambda m, a: z(m, a).abs() * 2, [PAIRS], dtypes=C),
    OpSpec("complex_abs_functional_squared", lambda m, a: m.abs(z(m, a)) ** 2, [PAIRS], dtypes=C),
    OpSpec("complex_angle", lambda m, a: m.angle(z(m, a)), [PAIRS], dtypes=C),
    OpSpec("angle_real", lambda m, a: m.angle(a) + a, [Arg((3, 4), kind="nonzero")], dtypes=C),
    OpSpec("cast_real_to_complex", lambda m, a, b: m.view_as_real(a.to(m.complex64 if a.dtype == m.float32 else m.complex128) * z(m, b)), [Arg((3, 4)), PAIRS], dtypes=C),
    OpSpec("cast_cfloat_method", lambda m, a: m.view_as_real(a.cfloat() * 2) if a.dtype == m.float32 else m.view_as_real(a.cdouble() * 2), [Arg((3,))], dtypes=C),
    OpSpec("rotary_embedding_llama", rotary, [Arg((2, 4, 3, 8)), Arg((2, 4, 3, 8))], dtypes=C,
           dtype_tol={"float64": (1e-6, 1e-5)},
           notes="llama computes the angles in float32 (arange(..., dtype=float32)); the float64 "
                 "case inherits their float32 rounding, where libm's float32 pow/cos may differ "
                 "from torch's by an ulp"),
    OpSpec("rotary_embedding_angle_grad", rotary_learned_freqs, [Arg((2, 4, 3, 8)), Arg((4, 4))], dtypes=C),
]
