"""Every op in the spec tables: forward and backward against PyTorch, and float64 finite
differences. Spec tables live in tests/ops/specs/*.py, one per op family (``SPECS``)."""

import importlib
import pkgutil

import numpy as np
import pytest
import torch

import shardflow
from shardflow.testing.gradcheck import gradcheck
from shardflow.testing.opspec import Arg

from . import specs as _specs_pkg

SPECS = []
for _m in pkgutil.iter_modules(_specs_pkg.__path__):
    SPECS.extend(importlib.import_module(f"{_specs_pkg.__name__}.{_m.name}").SPECS)

_ids = [s.name for s in SPECS]
assert len(_ids) == len(set(_ids)), "duplicate op spec names: " + str(sorted(i for i in _ids if _ids.count(i) > 1))


def _to(lib, values, spec):
    out = []
    for v, a in zip(values, spec.inputs):
        if isinstance(a, Arg):
            rg = a.differentiable
            out.append(lib.tensor(v, requires_grad=rg) if lib is shardflow else torch.tensor(v, requires_grad=rg))
        else:
            out.append(v)
    return out


def _float_outputs(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return list(outs)


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    if isinstance(x, shardflow.Tensor):
        a = x.numpy()
        return a.astype(np.float32) if a.dtype.kind == "V" else a
    return np.asarray(x)


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_forward_backward_vs_torch(spec):
    if spec.skip_torch:
        pytest.skip(spec.notes or "no PyTorch reference")
    values = spec.make_inputs()
    sf_in = _to(shardflow, values, spec)
    th_in = _to(torch, values, spec)
    sf_out = _float_outputs(spec.fn(shardflow, *sf_in))
    th_out = _float_outputs(spec.fn(torch, *th_in))
    assert len(sf_out) == len(th_out)
    for s, t in zip(sf_out, th_out):
        s_np, t_np = _np(s), _np(t)
        assert s_np.shape == t_np.shape, f"{spec.name}: shape {s_np.shape} vs torch {t_np.shape}"
        if isinstance(t, torch.Tensor):
            assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"{spec.name}: dtype {s.dtype} vs torch {t.dtype}"
        np.testing.assert_allclose(s_np, t_np, atol=spec.atol, rtol=spec.rtol, err_msg=spec.name)
    if not spec.grad:
        return
    rng = np.random.default_rng(spec.seed + 1)
    pairs = [(s, t) for s, t in zip(sf_out, th_out) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not pairs:
        return
    s_loss, t_loss = 0, 0
    for s, t in pairs:
        v = rng.standard_normal(tuple(t.shape)).astype(np.float32)
        s_loss = s_loss + (s * shardflow.tensor(v)).sum()
        t_loss = t_loss + (t * torch.tensor(v)).sum()
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
            np.testing.assert_allclose(_np(sg), _np(tg), atol=spec.atol * 10, rtol=spec.rtol * 10,
                                       err_msg=f"{spec.name}: grad of input {k}")


@pytest.mark.parametrize("spec", [s for s in SPECS if s.fd and s.grad], ids=[s.name for s in SPECS if s.fd and s.grad])
def test_finite_differences_float64(spec):
    values = spec.make_inputs(float_dtype="float64")
    inputs = []
    for v, a in zip(values, spec.inputs):
        if isinstance(a, Arg):
            inputs.append(shardflow.tensor(v, requires_grad=a.differentiable))
        else:
            inputs.append(v)
    assert any(isinstance(t, shardflow.Tensor) and t.requires_grad for t in inputs), spec.name
    gradcheck(lambda *xs: spec.fn(shardflow, *xs), inputs, atol=spec.fd_atol, rtol=spec.fd_rtol)
