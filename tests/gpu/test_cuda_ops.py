"""Every op of the spec table (tests/ops/specs) on ``device='cuda'`` against the same op on
the CPU: forward outputs and the gradients of every input, float32 tolerances (the CPU path
is itself checked against PyTorch and float64 finite differences in tests/ops).

Random-sampling specs are compared on shape and dtype only (CuPy's generator draws other
numbers than NumPy's). The op runs under ``with shardflow.device("cuda")``, so a tensor its
function builds (``m.tensor(...)``, ``m.arange(...)``) is made on the GPU, as under
``torch.set_default_device("cuda")``.

Skipped (with the reason) where CuPy sees no CUDA device: see tests/gpu/conftest.py.
"""

import importlib
import pkgutil

import numpy as np
import pytest

import shardflow
from shardflow.testing.opspec import Arg

from ..ops import specs as _specs_pkg

SPECS = []
for _m in pkgutil.iter_modules(_specs_pkg.__path__):
    SPECS.extend(importlib.import_module(f"{_specs_pkg.__name__}.{_m.name}").SPECS)

RANDOM_FAMILIES = ("sampling",)
_HOST_BY_DESIGN = {"from_numpy_float64"}  # torch.from_numpy shares NumPy's memory: always the CPU
_RANDOM = {s.name for _m in pkgutil.iter_modules(_specs_pkg.__path__) if _m.name in RANDOM_FAMILIES
           for s in importlib.import_module(f"{_specs_pkg.__name__}.{_m.name}").SPECS}


def _inputs(spec, device):
    out = []
    for v, a in zip(spec.make_inputs(), spec.inputs):
        if isinstance(a, Arg):
            out.append(shardflow.tensor(v, device=device, requires_grad=a.differentiable))
        else:
            out.append(v)
    return out


def _outs(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def _host(x):
    if isinstance(x, shardflow.Tensor):
        a = x.detach().cpu().numpy()
        return a.astype(np.float32) if a.dtype.kind == "V" else a
    return np.asarray(x)


def _run(spec, device):
    inputs = _inputs(spec, device)
    with shardflow.device(device):  # tensors the op's function builds (m.tensor, m.arange) go there too
        outs = _outs(spec.fn(shardflow, *inputs))
    return inputs, outs


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_op_on_cuda_matches_cpu(spec):
    check_op_on_cuda(spec)


def check_op_on_cuda(spec):
    """The op's outputs and input gradients on cuda equal the CPU's (also run by
    tests/host_cuda against CuPy's host stand-in)."""
    cpu_in, cpu_out = _run(spec, "cpu")
    gpu_in, gpu_out = _run(spec, "cuda")
    assert len(cpu_out) == len(gpu_out)
    for c, g in zip(cpu_out, gpu_out):
        if isinstance(c, shardflow.Tensor):
            assert isinstance(g, shardflow.Tensor), f"{spec.name}: cuda returned {type(g).__name__}"
            expected = "cpu" if spec.name in _HOST_BY_DESIGN else "cuda"
            assert g.device.type == expected, f"{spec.name}: output on {g.device}, expected {expected}"
            assert g.dtype == c.dtype, f"{spec.name}: dtype {g.dtype} on cuda vs {c.dtype} on cpu"
        hc, hg = _host(c), _host(g)
        assert hc.shape == hg.shape, f"{spec.name}: shape {hg.shape} on cuda vs {hc.shape} on cpu"
        if spec.name in _RANDOM:
            continue
        np.testing.assert_allclose(hg.astype(np.float64), hc.astype(np.float64),
                                   atol=max(spec.atol, 1e-5), rtol=max(spec.rtol, 1e-4),
                                   err_msg=f"{spec.name}: output")
    if not spec.grad or spec.name in _RANDOM:
        return
    rng = np.random.default_rng(spec.seed + 1)
    pairs = [(c, g) for c, g in zip(cpu_out, gpu_out)
             if isinstance(c, shardflow.Tensor) and c.requires_grad]
    if not pairs:
        return
    c_loss = g_loss = 0
    for c, g in pairs:
        v = rng.standard_normal(tuple(c.shape)).astype(np.float32)
        c_loss = c_loss + (c * shardflow.tensor(v).to(c.dtype)).sum()
        g_loss = g_loss + (g * shardflow.tensor(v, device="cuda").to(g.dtype)).sum()
    c_loss.backward()
    g_loss.backward()
    for k, (c, g) in enumerate(zip(cpu_in, gpu_in)):
        if isinstance(c, shardflow.Tensor) and c.requires_grad:
            if c.grad is None:
                assert g.grad is None or not np.any(_host(g.grad)), f"{spec.name}: grad {k}"
                continue
            assert g.grad is not None, f"{spec.name}: input {k} got no grad on cuda"
            assert g.grad.device.type == "cuda", f"{spec.name}: grad {k} on {g.grad.device}"
            np.testing.assert_allclose(_host(g.grad).astype(np.float64), _host(c.grad).astype(np.float64),
                                       atol=max(spec.atol, 1e-5) * 10, rtol=max(spec.rtol, 1e-4) * 10,
                                       err_msg=f"{spec.name}: grad of input {k}")
