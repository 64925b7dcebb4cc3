"""Anomaly detection against torch 2.13: the switches' names and defaults, their scoping, and
the NaN check of backward outputs (the error names the Function and the output index)."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf


@pytest.fixture(autouse=True)
def _restore():
    yield
    sf.set_anomaly_enabled(False)
    torch.set_anomaly_enabled(False)


def _error(lib, f, *xs):
    args = [lib.tensor(x, requires_grad=True) for x in xs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly(), pytest.raises(RuntimeError) as e:
            f(*args).sum().backward()
    return str(e.value)


@pytest.mark.parametrize("f, xs", [
    (lambda x: x.sqrt(), ([-1.0, 4.0],)),
    (lambda x, y: x / y, ([0.0, 1.0], [0.0, 2.0])),  # d/dy = -x/y^2: nan at 0/0, its 1th output
    (lambda x: x.log() * 0, ([0.0, 1.0],)),  # 0 * inf = nan in Mul's backward
])
def test_nan_in_backward_raises_torchs_error(f, xs):
    ours, theirs = _error(sf, f, *xs), _error(torch, f, *xs)
    assert ours == theirs
    assert ours.startswith("Function '") and "returned nan values in its" in ours


def test_switch_defaults_and_scoping_match_torch():
    for name in ("is_anomaly_enabled", "is_anomaly_check_nan_enabled"):
        assert getattr(sf, name)() == getattr(torch, name)()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = sf.autograd.detect_anomaly(check_nan=False)
    with ctx:
        assert sf.is_anomaly_enabled() and not sf.is_anomaly_check_nan_enabled()
    assert not sf.is_anomaly_enabled() and sf.is_anomaly_check_nan_enabled()
    sf.autograd.set_detect_anomaly(True)
    assert sf.is_anomaly_enabled()
    with sf.autograd.set_detect_anomaly(False):
        assert not sf.is_anomaly_enabled()
    assert sf.is_anomaly_enabled()
    sf.set_anomaly_enabled(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @sf.autograd.detect_anomaly()
        def inside():
            return sf.is_anomaly_enabled()

        assert inside() and not sf.is_anomaly_enabled()


def test_off_or_without_check_nan_the_nan_gradient_arrives():
    for ctx in (sf.autograd.set_detect_anomaly(False), sf.autograd.set_detect_anomaly(True, check_nan=False)):
        with ctx:
            x = sf.tensor([-1.0, 4.0], requires_grad=True)
            x.sqrt().sum().backward()
            assert np.isnan(x.grad.numpy()[0]) and x.grad.numpy()[1] == 0.25


def test_autograd_grad_is_checked_too():
    x = sf.tensor([-1.0, 4.0], requires_grad=True)
    with sf.autograd.set_detect_anomaly(True), pytest.raises(RuntimeError, match="'SqrtBackward0' returned nan"):
        sf.autograd.grad(x.sqrt().sum(), x)
    with sf.autograd.set_detect_anomaly(True):  # finite gradients pass
        (g,) = sf.autograd.grad((x * x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [-2.0, 8.0])
