"""``torch.normal(mean, std, size, *, dtype, layout, device, pin_memory, requires_grad)``: the
number form takes torch's factory keywords (d2l.ai writes ``torch.normal(0, 0.01, size=(2, 1),
requires_grad=True)`` for its weights); shardflow raised TypeError on them. The tensor forms
take none of them, as in torch (TypeError), and an integer dtype is refused as torch refuses it."""

import numpy as np
import pytest
import torch

import shardflow


@pytest.mark.parametrize("dtype", [None, "float64"])
def test_normal_numbers_with_factory_keywords_like_torch(dtype):
    out = []
    for lib in (shardflow, torch):
        lib.manual_seed(3)
        w = lib.normal(0, 0.01, size=(4, 5), requires_grad=True, device="cpu", layout=lib.strided,
                       dtype=None if dtype is None else getattr(lib, dtype))
        (w * w).sum().backward()
        out.append((w.detach().numpy(), w.grad.numpy(), w.requires_grad, w.is_leaf, str(w.dtype).split(".")[1]))
    (sw, sg, *s_rest), (tw, tg, *t_rest) = out
    np.testing.assert_array_equal(sw, tw)
    np.testing.assert_allclose(sg, tg, rtol=1e-6)
    assert s_rest == t_rest


@pytest.mark.parametrize("call", [
    lambda lib: lib.normal(lib.zeros(2), 1.0, requires_grad=True),
    lambda lib: lib.normal(0.0, lib.ones(2), dtype=lib.float64),
    lambda lib: lib.normal(lib.zeros(2), lib.ones(2), requires_grad=True),
])
def test_normal_tensor_forms_refuse_factory_keywords_like_torch(call):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError, match="factory keywords.*only with numbers"):
        call(shardflow)


def test_normal_integer_dtype_refused_like_torch():
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        torch.normal(0.0, 1.0, (2,), dtype=torch.int64)
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu.*float dtype"):
        shardflow.normal(0.0, 1.0, (2,), dtype=shardflow.int64)
