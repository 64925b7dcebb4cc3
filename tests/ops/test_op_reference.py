"""Every op in the spec tables: forward and backward against PyTorch, in float32 and in the
other floating dtypes of the spec's ``dtypes`` axis, and float64 finite differences. Spec
tables live in tests/ops/specs/*.py, one per op family (``SPECS``).

Dtype axis: the spec's floating inputs are drawn in float32, then cast to the dtype (so
every dtype sees the same values, rounded), and both libraries run the same function on
them. Tolerances per dtype (``_tolerance``): float32 uses the spec's; float64 is 10^5 times
tighter (a float64 op computed through float32 fails it); bfloat16 (ml_dtypes on the
shardflow side) is compared with torch's bfloat16 result at a few bfloat16 ulps
(2^-8 = 0.4% each) relative to the output's scale, since the two libraries may round
intermediate results differently.
"""

import importlib
import pkgutil

import ml_dtypes
import numpy as np
import pytest
import torch

import shardflow
from shardflow.testing.gradcheck import gradcheck
from shardflow.testing.opspec import Arg

from . import specs as _specs_pkg
from .dtype_gaps import KNOWN_GAPS, known_gap

SPECS = []
for _m in pkgutil.iter_modules(_specs_pkg.__path__):
    SPECS.extend(importlib.import_module(f"{_specs_pkg.__name__}.{_m.name}").SPECS)

_ids = [s.name for s in SPECS]
assert len(_ids) == len(set(_ids)), "duplicate op spec names: " + str(sorted(i for i in _ids if _ids.count(i) > 1))

_NP_DTYPE = {"float32": np.float32, "float64": np.float64, "bfloat16": ml_dtypes.bfloat16}
_TORCH_DTYPE = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}


def _follows_axis(a):
    """A random floating input left at the default dtype (an explicit dtype, such as a
    float64 argument of a promotion spec, stays what the spec says)."""
    return isinstance(a, Arg) and a.kind in Arg.FLOAT_KINDS and a.dtype == "float32"


def _has_float_input(spec):
    return any(_follows_axis(a) for a in spec.inputs)


def test_known_gaps_name_real_specs():
    """Every name in dtype_gaps.py is a spec of the table run in that dtype (no stale entries)."""
    run = {(s.name, d) for s, d in _ALL_CASES}
    stale = [(n, d) for d, causes in KNOWN_GAPS.items() for names in causes.values() for n in names
             if (n, d) not in run]
    assert not stale, f"dtype_gaps.py lists cases the table does not run: {stale}"


# (spec, dtype) pairs: float32 for every spec, the other dtypes for specs with a floating input;
# the known gaps (dtype_gaps.py) run in test_known_dtype_gaps_still_fail instead
_ALL_CASES = [(s, d) for s in SPECS for d in s.dtypes if d == "float32" or _has_float_input(s)]
CASES = [(s, d) for s, d in _ALL_CASES if known_gap(s.name, d) is None]
GAP_CASES = [(s, d) for s, d in _ALL_CASES if known_gap(s.name, d) is not None]


def _values(spec, dtype):
    values = spec.make_inputs()
    if dtype == "float32":
        return values
    return [v.astype(_NP_DTYPE[dtype]) if _follows_axis(a) else v for v, a in zip(values, spec.inputs)]


def _to(lib, values, spec):
    out = []
    for v, a in zip(values, spec.inputs):
        if isinstance(a, Arg):
            rg = a.differentiable
            if lib is shardflow:
                out.append(lib.tensor(v, requires_grad=rg))
            elif v.dtype == ml_dtypes.bfloat16:  # exact: every bfloat16 is a float32
                out.append(torch.tensor(v.astype(np.float32)).to(torch.bfloat16).requires_grad_(rg))
            else:
                out.append(torch.tensor(v, requires_grad=rg))
        else:
            out.append(v)
    return out


def _float_outputs(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return list(outs)


def _np(x):
    if isinstance(x, torch.Tensor):
        x = x.detach()
        return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()
    if isinstance(x, shardflow.Tensor):
        a = x.numpy()
        return a.astype(np.float32) if a.dtype.kind == "V" else a
    return np.asarray(x)


def _tolerance(spec, dtype, reference):
    """(atol, rtol) for comparing with torch's ``reference`` array in ``dtype``."""
    if dtype in spec.dtype_tol:
        return spec.dtype_tol[dtype]
    if dtype == "float64":
        return spec.atol * 1e-5, spec.rtol * 1e-5
    if dtype == "bfloat16":
        scale = float(np.max(np.abs(reference))) if reference.size else 1.0
        return max(spec.atol, 2 ** -6 * max(scale, 1.0)), max(spec.rtol, 2 ** -6)
    return spec.atol, spec.rtol


def _assert_close(got, want, spec, dtype, what, grad=False):
    atol, rtol = _tolerance(spec, dtype, want)
    if grad and dtype == "float32":
        atol, rtol = atol * 10, rtol * 10
    elif grad:
        atol, rtol = atol * 4, rtol * 4
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=atol, rtol=rtol,
                               err_msg=f"{spec.name} [{dtype}]: {what}")


def _torch_reference(spec, values, dtype):
    """torch's inputs and outputs for the case. Where torch has no bfloat16 kernel for the op
    on CPU, the reference is torch in float32 on the same (bfloat16-rounded) values, compared
    at bfloat16 tolerance; ``upcast`` says so."""
    th_in = _to(torch, values, spec)
    try:
        return th_in, _float_outputs(spec.fn(torch, *th_in)), False
    except (RuntimeError, NotImplementedError) as e:
        if dtype != "bfloat16" or "BFloat16" not in str(e):
            raise
    wide = [v.astype(np.float32) if _follows_axis(a) else v for v, a in zip(values, spec.inputs)]
    th_in = _to(torch, wide, spec)
    return th_in, _float_outputs(spec.fn(torch, *th_in)), True


@pytest.mark.parametrize("spec,dtype", CASES, ids=[f"{s.name}-{d}" for s, d in CASES])
def test_forward_backward_vs_torch(spec, dtype):
    if spec.skip_torch:
        pytest.skip(spec.notes or "no PyTorch reference")
    _compare_with_torch(spec, dtype)


def test_known_dtype_gaps_still_fail():
    """The cases listed in dtype_gaps.py, run together (one test: pytest would format a
    traceback for each xfail, seconds in all). Each must still fail; one that passes has been
    fixed and must leave the list, so the list never hides a case that works."""
    fixed = []
    for spec, dtype in GAP_CASES:
        try:
            _compare_with_torch(spec, dtype)
        except Exception:  # noqa: BLE001, S112 - any failure is the recorded one
            continue
        fixed.append(f"{spec.name} [{dtype}]")
    assert not fixed, f"these pass now: delete them from tests/ops/dtype_gaps.py: {fixed}"


def _compare_with_torch(spec, dtype):
    values = _values(spec, dtype)
    sf_in = _to(shardflow, values, spec)
    sf_out = _float_outputs(spec.fn(shardflow, *sf_in))
    th_in, th_out, upcast = _torch_reference(spec, values, dtype)
    assert len(sf_out) == len(th_out)
    for s, t in zip(sf_out, th_out):
        s_np, t_np = _np(s), _np(t)
        assert s_np.shape == t_np.shape, f"{spec.name}: shape {s_np.shape} vs torch {t_np.shape}"
        if isinstance(t, torch.Tensor):
            want = "bfloat16" if upcast and t.dtype == torch.float32 else str(t.dtype).split(".")[-1]
            assert str(s.dtype).split(".")[-1] == want, f"{spec.name}: dtype {s.dtype} vs torch {want}"
        _assert_close(s_np, t_np, spec, dtype, "output")
    if not spec.grad:
        return
    rng = np.random.default_rng(spec.seed + 1)
    pairs = [(s, t) for s, t in zip(sf_out, th_out) if isinstance(t, torch.Tensor) and t.requires_grad]
    assert pairs, f"{spec.name}: the spec says grad=True but no torch output requires grad " \
                  "(set grad=False, or make an input differentiable)"
    s_loss, t_loss = 0, 0
    for s, t in pairs:
        v = rng.standard_normal(tuple(t.shape)).astype(np.float32)
        s_loss = s_loss + (s * shardflow.tensor(v).to(s.dtype)).sum()
        t_loss = t_loss + (t * torch.tensor(v).to(t.dtype)).sum()
    s_loss.backward()
    t_loss.backward()
    for k, (s, t) in enumerate(zip(sf_in, th_in)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            tg = t.grad
            sg = s.grad
            if tg is None:
                assert sg is None or np.all(_np(sg) == 0), f"{spec.name}: input {k} got a grad, torch did not"
                continue
            assert sg is not None, f"{spec.name}: input {k} got no grad"
            assert str(sg.dtype) == str(s.dtype), f"{spec.name}: grad dtype {sg.dtype} vs input {s.dtype}"
            _assert_close(_np(sg), _np(tg), spec, dtype, f"grad of input {k}", grad=True)


FD_SPECS = [s for s in SPECS if s.fd and s.grad]


@pytest.mark.parametrize("spec", FD_SPECS, ids=[s.name for s in FD_SPECS])
def test_finite_differences_float64(spec):
    values = spec.make_inputs(float_dtype="float64")
    inputs = []
    for v, a in zip(values, spec.inputs):
        if isinstance(a, Arg):
            inputs.append(shardflow.tensor(v, requires_grad=a.differentiable))
        else:
            inputs.append(v)
    assert any(isinstance(t, shardflow.Tensor) and t.requires_grad for t in inputs), spec.name
    gradcheck(lambda *xs: spec.fn(shardflow, *xs), inputs, atol=spec.fd_atol, rtol=spec.fd_rtol,
              elements=spec.fd_elements)
