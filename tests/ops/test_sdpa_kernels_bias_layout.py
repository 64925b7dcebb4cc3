"""SDPA's kernel switches, ``nn.attention.bias`` causal biases and the output's memory layout,
against PyTorch 2.13 on a CPU (found by the SDPA tutorial, tests/parity/test_public_programs_more_l.py)."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch.nn.attention import SDPBackend as TBackend
from torch.nn.attention import sdpa_kernel as t_sdpa_kernel
from torch.nn.attention.bias import causal_lower_right as t_lower_right
from torch.nn.attention.bias import causal_upper_left as t_upper_left

import shardflow
import shardflow.nn.functional as F
from shardflow.nn.attention import SDPBackend, sdpa_kernel
from shardflow.nn.attention.bias import (
    CausalBias,
    CausalVariant,
    causal_lower_right,
    causal_upper_left,
)


def _pair(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.from_numpy(a.copy()), shardflow.from_numpy(a.copy())


# ---------------------------------------------------------------- sdpa_kernel on a CPU
BACKENDS = ["MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "OVERRIDEABLE",
            ["EFFICIENT_ATTENTION", "MATH"], ["CUDNN_ATTENTION", "FLASH_ATTENTION"]]


@pytest.mark.parametrize("names", BACKENDS, ids=str)
def test_sdpa_kernel_cpu_kernels_like_torch(names):
    """On a CPU torch has the math and flash kernels: a block allowing neither raises
    RuntimeError (torch's message), otherwise SDPA computes; the ``backends.cuda`` switches
    read inside the block are torch's, and are restored after it."""
    names = names if isinstance(names, list) else [names]
    tq, sq = _pair((2, 2, 5, 4), 0)
    results = []
    for lib, Backend, kernel, f in ((torch, TBackend, t_sdpa_kernel, TF), (shardflow, SDPBackend, sdpa_kernel, F)):
        chosen = [getattr(Backend, n) for n in names]
        q = tq if lib is torch else sq
        with kernel(chosen if len(chosen) > 1 else chosen[0]):
            switches = [getattr(lib.backends.cuda, f"{s}_sdp_enabled")() for s in ("math", "flash", "mem_efficient")]
            try:
                out = f.scaled_dot_product_attention(q, q, q).numpy()
            except RuntimeError as e:
                out = str(e)
        after = [getattr(lib.backends.cuda, f"{s}_sdp_enabled")() for s in ("math", "flash", "mem_efficient")]
        results.append((switches, out, after))
    (t_sw, t_out, t_after), (s_sw, s_out, s_after) = results
    assert s_sw == t_sw and s_after == t_after == [True, True, True]
    if isinstance(t_out, str):
        assert isinstance(s_out, str) and s_out.startswith(t_out), (s_out, t_out)
    else:
        np.testing.assert_allclose(s_out, t_out, rtol=1e-5, atol=1e-6)


def test_sdpa_kernel_flash_alone_refuses_dropout_like_torch():
    """torch's CPU flash kernel has no dropout: flash alone with ``dropout_p > 0`` raises
    RuntimeError ("No available kernel"), with math allowed it runs."""
    tq, sq = _pair((1, 2, 4, 4), 1)
    with t_sdpa_kernel(TBackend.FLASH_ATTENTION), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="No available kernel"):
            TF.scaled_dot_product_attention(tq, tq, tq, dropout_p=0.5)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with pytest.raises(RuntimeError, match=r"No available kernel.*SDPBackend.MATH"), \
                pytest.warns(UserWarning, match="non-zero dropout"):
            F.scaled_dot_product_attention(sq, sq, sq, dropout_p=0.5)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        assert F.scaled_dot_product_attention(sq, sq, sq, dropout_p=0.5).shape == (1, 2, 4, 4)


# ---------------------------------------------------------------- nn.attention.bias
@pytest.mark.parametrize("lq,lk", [(2, 10), (4, 4), (5, 3)])
@pytest.mark.parametrize("variant", ["upper_left", "lower_right"])
def test_causal_bias_sdpa_like_torch(variant, lq, lk):
    """SDPA with ``causal_upper_left`` / ``causal_lower_right``: values and gradients of q, k
    and v are torch's (a lower-right bias with L > S leaves rows with no key: zeros in both,
    and both warn at construction); the bias prints as torch's materialized mask."""
    t_make, s_make = {"upper_left": (t_upper_left, causal_upper_left),
                      "lower_right": (t_lower_right, causal_lower_right)}[variant]
    with warnings.catch_warnings(record=True) as t_warned:
        warnings.simplefilter("always")
        tb = t_make(lq, lk)
    with warnings.catch_warnings(record=True) as s_warned:
        warnings.simplefilter("always")
        sb = s_make(lq, lk)
    assert [str(w.message) for w in s_warned] == [str(w.message) for w in t_warned]
    assert repr(sb) == repr(tb) and str(sb) == str(tb)
    assert isinstance(sb, shardflow.Tensor) and sb.variant == CausalVariant[variant.upper()]
    grads = []
    for lib, f, bias in ((torch, TF, tb), (shardflow, F, sb)):
        q, k, v = (lib.from_numpy(np.random.default_rng(i).standard_normal(s).astype(np.float32)).requires_grad_()
                   for i, s in enumerate([(2, 2, lq, 4), (2, 2, lk, 4), (2, 2, lk, 3)]))
        out = f.scaled_dot_product_attention(q, k, v, bias)
        out.backward(lib.ones_like(out))
        grads.append([t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)])
    for s, t, name in zip(*grads, ("out", "q.grad", "k.grad", "v.grad"), strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-6, err_msg=name)


def test_causal_bias_errors_like_torch():
    """``is_causal=True`` with a bias raises ValueError; a size that is not 2-D raises
    AssertionError; ``CausalBias`` needs a ``CausalVariant``."""
    q = shardflow.ones(1, 1, 2, 4)
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        F.scaled_dot_product_attention(q, q, q, causal_upper_left(2, 2), is_causal=True)
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        TF.scaled_dot_product_attention(torch.ones(1, 1, 2, 4), torch.ones(1, 1, 2, 4), torch.ones(1, 1, 2, 4),
                                         t_upper_left(2, 2), is_causal=True)
    for make in (causal_upper_left, causal_lower_right, t_upper_left, t_lower_right):
        with pytest.raises(AssertionError, match="only supports 2D tensors"):
            make(2, 3, 4)
    with pytest.raises(AssertionError, match="variant must be a CausalVariant, got int"):
        CausalBias(1, 2, 3)
    assert [(v.name, v.value) for v in CausalVariant] == [(v.name, v.value) for v in torch.nn.attention.bias.CausalVariant]


# ---------------------------------------------------------------- the output's layout
def _layouts(lib):
    rng = np.random.default_rng(2)

    def t(shape):
        return lib.from_numpy(rng.standard_normal(shape).astype(np.float32))

    return {
        "contiguous": t((2, 2, 6, 4)),
        "transposed": t((2, 6, 2, 4)).transpose(1, 2),
        "chunk of a projection": t((2, 6, 24))[..., :8].view(2, 6, 2, 4).transpose(1, 2),
        "sequence outermost": t((6, 2, 2, 4)).permute(1, 2, 0, 3),
        "last stride not 1": t((2, 4, 6, 2)).permute(0, 3, 2, 1),
        "one head": t((2, 6, 1, 4)).transpose(1, 2),
    }


@pytest.mark.parametrize("name", ["contiguous", "transposed", "chunk of a projection",
                                  "sequence outermost", "last stride not 1", "one head"])
def test_sdpa_output_layout_like_torch(name):
    """torch's CPU SDPA (flash) lays its output out as the query is laid out; a program then
    views ``out.transpose(1, 2)`` without ``contiguous()``. The strides (of every dim longer
    than 1), ``is_contiguous`` of the transpose, the values and the gradient are torch's;
    with dropout (the math kernel) the output is contiguous in both."""
    tq, sq = _layouts(torch)[name], _layouts(shardflow)[name]
    to = TF.scaled_dot_product_attention(tq, tq, tq)
    so = F.scaled_dot_product_attention(sq, sq, sq)
    dims = [d for d in range(4) if to.shape[d] > 1]
    assert [so.stride(d) for d in dims] == [to.stride(d) for d in dims]
    assert so.transpose(1, 2).is_contiguous() == to.transpose(1, 2).is_contiguous()
    np.testing.assert_allclose(so.numpy(), to.numpy(), rtol=1e-5, atol=1e-6)
    if to.transpose(1, 2).is_contiguous():
        B, H, L, E = to.shape
        np.testing.assert_allclose(so.transpose(1, 2).view(B, L, H * E).numpy(),
                                   to.transpose(1, 2).view(B, L, H * E).numpy(), rtol=1e-5, atol=1e-6)
    for lib, f, q in ((torch, TF, tq), (shardflow, F, sq)):
        assert f.scaled_dot_product_attention(q, q, q, dropout_p=0.5).is_contiguous()
    tl = tq.detach().clone().requires_grad_()
    sl = shardflow.from_numpy(tl.detach().numpy().copy()).requires_grad_()
    (TF.scaled_dot_product_attention(tl, tl, tl) ** 2).sum().backward()
    (F.scaled_dot_product_attention(sl, sl, sl) ** 2).sum().backward()
    np.testing.assert_allclose(sl.grad.numpy(), tl.grad.numpy(), rtol=1e-4, atol=1e-5)
