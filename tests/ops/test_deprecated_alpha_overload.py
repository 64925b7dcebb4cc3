"""PyTorch's deprecated ``add(input, alpha, other)`` / ``sub(input, alpha, other)`` and the
methods ``x.add_(alpha, other)`` / ``x.sub_(alpha, other)`` (a Number, then a Tensor), as old
tutorials write ``p.data.add_(-learning_rate, p.grad.data)``: torch accepts them with a
UserWarning (once per process there; shardflow's goes through Python's warning
filters), meaninging ``other * alpha``; shardflow does the same. Values, gradients, the
warning, and the TypeError for a malformed call, against torch."""

import contextlib
import warnings

import numpy as np
import pytest
import torch

import shardflow

_A = np.array([1.0, -2.0, 0.5], np.float32)
_B = np.array([3.0, 0.25, -1.5], np.float32)


@contextlib.contextmanager
def _ignoring_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _warns(lib, match):
    """torch warns once per process (TORCH_WARN_ONCE), so only shardflow's warning is
    required; torch's, if it comes, is ignored."""
    return pytest.warns(UserWarning, match=match) if lib is shardflow else _ignoring_warnings()


def _pair(lib):
    return (lib.tensor(_A.copy(), requires_grad=True), lib.tensor(_B.copy(), requires_grad=True))


@pytest.mark.parametrize("form", ["add", "sub", "method_add", "method_sub"])
def test_alpha_first_values_gradients_and_warning(form):
    results = []
    for lib in (torch, shardflow):
        a, b = _pair(lib)
        with _warns(lib, "This overload of .* is deprecated"):
            if form in ("add", "sub"):
                out = getattr(lib, form)(a, -0.5, b)
            else:
                out = getattr(a, form.split("_")[1])(-0.5, b)
        (out * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        results.append((out.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
    for th, sf in zip(results[0], results[1]):
        np.testing.assert_allclose(sf, th, rtol=1e-6)


@pytest.mark.parametrize("name", ["add_", "sub_"])
def test_inplace_alpha_first_like_the_old_sgd_step(name):
    outs = []
    for lib in (torch, shardflow):
        p = lib.tensor(_A.copy())
        with _warns(lib, "deprecated"):
            getattr(p, name)(-0.0005, lib.tensor(_B.copy()))
        outs.append(p.numpy())
    np.testing.assert_array_equal(outs[1], outs[0])


def test_alpha_first_with_a_number_other():
    outs = []
    for lib in (torch, shardflow):
        with _ignoring_warnings():
            outs.append(lib.add(lib.tensor(_A.copy()), 2, 3).numpy())
    np.testing.assert_array_equal(outs[1], outs[0])


def test_tensor_then_number_is_a_type_error():
    for lib in (torch, shardflow):
        with pytest.raises(TypeError):
            lib.add(lib.tensor(_A.copy()), lib.tensor(_B.copy()), 2)


def test_alpha_keyword_with_the_deprecated_form_is_a_type_error():
    for lib in (torch, shardflow):
        a, b = lib.tensor(_A.copy()), lib.tensor(_B.copy())
        with pytest.raises(TypeError):
            lib.add(a, 2, b, alpha=3)
