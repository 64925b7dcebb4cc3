"""Differential fuzzing against PyTorch: the machinery the ``tests/ops/fuzz/test_fuzz_*.py``
files share.

A *case* is an op (a function ``fn(L, *tensors)`` run with ``L`` = torch and ``L`` =
shardflow) and its inputs drawn as NumPy arrays (``Inp``: values, dtype, a memory layout and
whether it requires grad). ``check(fn, inputs)`` builds the same tensors in both libraries,
lays them out the same way (contiguous, transposed, a stepped slice or an expanded view of
the same values), calls the op in both and asserts:

* the same outcome kind: both return, or both raise the same exception type (where torch's
  CPU kernel lacks a dtype that shardflow computes, see ``PERMISSIVE``, a result is accepted);
* per returned tensor (recursively through tuples, lists and named tuples): the same dtype,
  shape and values (exact for integer, bool and complex-integer results; at a per-dtype
  tolerance for floats, with NaN and inf at the same positions); Python scalars equal;
* the inputs afterwards: an in-place op or a write through a view changed them the same way;
* with ``grad=True``: the gradients of a random weighted sum of the float outputs.

Hypothesis draws the cases; every test uses ``FUZZ`` (derandomized, no example database, a
small ``max_examples``) so CI runs the same examples every time in a few seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import shardflow as sf

FUZZ = settings(derandomize=True, max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32", "int16", "int8", "uint8")
NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
      "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
      "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128}
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, math.nan, math.inf, -math.inf]


@dataclass
class Inp:
    """One input: ``values`` (a NumPy array, the logical values), the ``layout`` its tensor
    is given ("contig", "T": a transposed view, "step": every other row of a larger tensor,
    "expand": an expanded view of a size-1 dim) and ``grad`` (requires_grad)."""
    values: np.ndarray
    layout: str = "contig"
    grad: bool = False

    def __repr__(self):
        return f"Inp({self.values.dtype}{list(self.values.shape)} {self.layout}{' grad' if self.grad else ''}: " \
               f"{self.values.tolist()!r})"


def _lib_tensor(L, a):
    if L is torch:
        if a.dtype == ml_dtypes.bfloat16:  # exact: every bfloat16 is a float32
            return torch.tensor(a.astype(np.float32)).to(torch.bfloat16)
        return torch.tensor(a)
    return sf.tensor(a)


def make(L, inp: Inp):
    """The tensor of ``inp`` in library ``L``, in ``inp.layout``."""
    v = inp.values
    if inp.layout == "T" and v.ndim >= 2:
        t = _lib_tensor(L, np.ascontiguousarray(np.swapaxes(v, -1, -2))).transpose(-1, -2)
    elif inp.layout == "step" and v.ndim >= 1:
        big = np.zeros((v.shape[0] * 2,) + v.shape[1:], v.dtype)
        big[::2] = v
        t = _lib_tensor(L, big)[::2]
    elif inp.layout == "expand" and v.ndim >= 1 and v.shape[0] >= 1:
        t = _lib_tensor(L, np.ascontiguousarray(v[:1])).expand(*v.shape)
    else:
        t = _lib_tensor(L, v)
    if inp.grad:
        t = t.detach().requires_grad_(True)  # a leaf, in the layout drawn
    return t


def to_np(x):
    x = x.detach() if hasattr(x, "detach") else x
    if isinstance(x, torch.Tensor):
        return x.float().numpy() if x.dtype == torch.bfloat16 else x.resolve_conj().numpy()
    a = x.numpy()
    return a.astype(np.float32) if a.dtype == ml_dtypes.bfloat16 else a


def dtype_name(d):
    return str(d).split(".")[-1]


def _tol(dt):
    return {"float64": (1e-10, 1e-9), "complex128": (1e-10, 1e-9), "float32": (1e-5, 1e-5),
            "complex64": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}.get(dt)


def assert_same_values(s, t, what, scale_tol=1.0):
    """``s`` (shardflow) and ``t`` (torch) are tensors of the same dtype, shape and values."""
    sd, td = dtype_name(s.dtype), dtype_name(t.dtype)
    assert sd == td, f"{what}: dtype {sd}, torch {td}"
    assert tuple(s.shape) == tuple(t.shape), f"{what}: shape {tuple(s.shape)}, torch {tuple(t.shape)}"
    sa, ta = to_np(s), to_np(t)
    tol = _tol(td)
    if tol is None:
        np.testing.assert_array_equal(sa, ta, err_msg=what)
        return
    atol, rtol = tol[0] * scale_tol, tol[1] * scale_tol
    if ta.size:
        # relative to the output's scale: rounding differences of a sum or a product scale with it
        fin = np.abs(ta[np.isfinite(ta)])
        atol = atol * max(1.0, float(fin.max()) if fin.size else 1.0)
    np.testing.assert_allclose(sa.astype(np.complex128 if sa.dtype.kind == "c" else np.float64),
                               ta.astype(np.complex128 if ta.dtype.kind == "c" else np.float64),
                               atol=atol, rtol=rtol, equal_nan=True, err_msg=what)


def _same(s, t, what, scale_tol):
    if isinstance(t, torch.Tensor):
        assert isinstance(s, sf.Tensor), f"{what}: got {type(s).__name__}, torch a Tensor"
        assert_same_values(s, t, what, scale_tol)
    elif isinstance(t, tuple | list):
        assert isinstance(s, tuple | list), f"{what}: got {type(s).__name__}, torch {type(t).__name__}"
        assert len(s) == len(t), f"{what}: {len(s)} results, torch {len(t)}"
        for k, (a, b) in enumerate(zip(s, t)):
            _same(a, b, f"{what}[{k}]", scale_tol)
    elif isinstance(t, float) and math.isnan(t):
        assert isinstance(s, float) and math.isnan(s), f"{what}: {s!r}, torch nan"
    elif isinstance(t, torch.dtype):
        assert dtype_name(s) == dtype_name(t), f"{what}: {s}, torch {t}"
    else:
        assert type(s) is type(t) or (isinstance(s, int | float) and isinstance(t, int | float)), \
            f"{what}: {type(s).__name__}, torch {type(t).__name__}"
        if isinstance(t, float):
            assert math.isclose(s, t, rel_tol=1e-5, abs_tol=1e-6), f"{what}: {s!r}, torch {t!r}"
        else:
            assert s == t, f"{what}: {s!r}, torch {t!r}"


def _call(L, fn, inputs):
    ts = [make(L, i) for i in inputs]
    try:
        return ts, fn(L, *ts), None
    except Exception as e:  # noqa: BLE001 - the outcome compared
        return ts, None, e


# exception types that are the same thing under another name in the two libraries
_EQUIV = {"NotImplementedError": "RuntimeError"}


def _flat(out):
    if isinstance(out, torch.Tensor | sf.Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [x for o in out for x in _flat(o)]
    return []


# torch refusals that shardflow does not copy: its kernels cover a dtype torch's CPU kernel
# lacks (ceil of bool, round(decimals) of ints, clamp of complex, ...) or it promotes mixed
# float dtypes where torch's lerp asks for one. A result there is more permissive, not wrong;
# any other "torch raised, shardflow returned" fails the check.
# (shardflow raising another exception type there is accepted too: an exception-type
# difference for an unsupported dtype, left for later). It also takes a Python scalar where
# torch's signature wants a Tensor ("must be Tensor, not int").
PERMISSIVE = ("not implemented for '", "not supported for complex", "Boolean inputs not supported",
              "does not support bool", "expected dtype", "Autograd not support dtype", "must be Tensor, not",
              "received an invalid combination of arguments", "not implemented for complex",
              "not intended to support complex")


def check(fn, inputs, *, grad=False, scale_tol=1.0, exc_type=True):
    """Run ``fn(L, *tensors)`` in torch and shardflow on ``inputs`` and assert they agree (see
    the module docstring). ``scale_tol`` widens the float tolerance where the op's own rounding
    differs by summation order (say why at the call). ``exc_type=False`` accepts any exception
    where torch raises (for ops whose exception types are not the point)."""
    if grad:
        inputs = [Inp(i.values, i.layout, i.values.dtype.kind == "f" and i.values.dtype != ml_dtypes.bfloat16
                      and i.values.dtype != np.float16)
                  for i in inputs]
    tts, tout, terr = _call(torch, fn, inputs)
    sts, sout, serr = _call(sf, fn, inputs)
    if terr is not None:
        if any(p in str(terr) for p in PERMISSIVE):
            return
        assert serr is not None, f"torch raised {type(terr).__name__}: {terr}; shardflow returned {sout!r}"
        if exc_type:
            tn, sn = type(terr).__name__, type(serr).__name__
            ok = tn == sn or _EQUIV.get(tn) == sn or isinstance(serr, type(terr))
            assert ok, f"torch raised {tn}: {terr}; shardflow raised {sn}: {serr}"
        return
    if serr is not None:
        raise AssertionError(f"shardflow raised {type(serr).__name__}: {serr}; torch returned {tout!r}") from serr
    _same(sout, tout, "result", scale_tol)
    for k, (s, t) in enumerate(zip(sts, tts)):
        assert_same_values(s, t, f"input {k} after the call", scale_tol)
    if not grad:
        return
    touts = [o for o in _flat(tout) if o.requires_grad and o.grad_fn is not None]
    souts = [o for o in _flat(sout) if o.requires_grad]
    if not touts:
        return
    rng = np.random.default_rng(len(touts))
    tl, sl = 0, 0
    for t, s in zip([o for o in _flat(tout)], _flat(sout)):
        if not (t.requires_grad and t.dtype.is_floating_point):
            continue
        assert s.requires_grad, "shardflow output does not require grad where torch's does"
        w = rng.standard_normal(tuple(t.shape)).astype(np.float64)
        tl = tl + (t * torch.tensor(w).to(t.dtype)).sum()
        sl = sl + (s * sf.tensor(w).to(s.dtype)).sum()
    if not isinstance(tl, torch.Tensor):
        return
    tg = torch.autograd.grad(tl, [t for t in tts if t.requires_grad], allow_unused=True)
    sg = sf.autograd.grad(sl, [s for s in sts if s.requires_grad], allow_unused=True)
    assert souts
    for k, (s, t) in enumerate(zip(sg, tg)):
        if t is None:
            assert s is None or not np.any(to_np(s)), f"grad {k}: shardflow has one, torch None"
            continue
        assert s is not None, f"grad {k}: shardflow None, torch has one"
        assert_same_values(s, t, f"grad of input {k}", scale_tol * 10)


# ---------------------------------------------------------------- strategies

def sizes(max_ndim=3, min_ndim=0, max_size=4):
    return st.lists(st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4][:max_size * 2]).filter(lambda n: n <= max_size),
                    min_size=min_ndim, max_size=max_ndim).map(tuple)


def float_values(dt, shape, specials=True, lo=-10.0, hi=10.0):
    import hypothesis.extra.numpy as hnp
    pool = [x for x in SPECIALS if specials or math.isfinite(x)]
    el = st.one_of(st.sampled_from(pool), st.integers(-3, 3).map(float),
                   st.floats(lo, hi, allow_nan=False, width=32))
    return hnp.arrays(np.float64, shape, elements=el).map(lambda a: a.astype(NP[dt]))


def int_values(dt, shape, lo=-5, hi=5):
    import hypothesis.extra.numpy as hnp
    if dt == "uint8":
        lo = max(lo, 0)
    return hnp.arrays(NP[dt], shape, elements=st.integers(lo, hi))


def values(dt, shape, specials=True):
    if dt in FLOATS:
        return float_values(dt, shape, specials)
    if dt in INTS:
        return int_values(dt, shape)
    if dt == "bool":
        import hypothesis.extra.numpy as hnp
        return hnp.arrays(np.bool_, shape)
    if dt in ("complex64", "complex128"):
        fdt = "float32" if dt == "complex64" else "float64"
        return st.tuples(float_values(fdt, shape, False), float_values(fdt, shape, False)).map(
            lambda p: (p[0] + 1j * p[1]).astype(NP[dt]))
    raise ValueError(dt)


def layouts(shape):
    opts = ["contig", "contig"]
    if len(shape) >= 2:
        opts.append("T")
    if len(shape) >= 1:
        opts.append("step")
    return st.sampled_from(opts)


@st.composite
def inp(draw, shape=None, dtypes=FLOATS, specials=True, layout=True, max_ndim=3, min_ndim=0):
    """An ``Inp`` of a drawn (or the given) shape and dtype; sometimes an expanded view."""
    if shape is None:
        shape = draw(sizes(max_ndim, min_ndim))
    dt = draw(st.sampled_from(dtypes))
    if layout and len(shape) >= 1 and shape[0] > 1 and draw(st.integers(0, 5)) == 0:
        v = draw(values(dt, (1,) + tuple(shape[1:]), specials))
        return Inp(np.array(np.broadcast_to(v, shape)), "expand")
    v = np.array(draw(values(dt, shape, specials)))
    return Inp(v, draw(layouts(shape)) if layout else "contig")


@st.composite
def broadcast_shape(draw, shape):
    """A shape that broadcasts with ``shape``: leading dims dropped or added, some dims 1."""
    out = list(shape[draw(st.integers(0, len(shape))):])
    out = [1 if draw(st.integers(0, 3)) == 0 else n for n in out]
    if draw(st.integers(0, 4)) == 0:
        out = [draw(st.sampled_from([1, 2]))] + out
    return tuple(out)


def dim_of(ndim):
    """A valid dim (negative too) for ``ndim`` dims; 0-d tensors take -1 and 0."""
    n = max(ndim, 1)
    return st.integers(-n, n - 1)
