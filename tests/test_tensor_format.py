"""Tensors print exactly as torch 2.13 prints them (``repr``/``str``/``print``/f-strings),
with shardflow's names (``dtype=shardflow.float64``) in place of torch's."""

import contextlib
import io
import re

import numpy as np
import pytest
import torch

import shardflow as sf

_RNG = np.random.default_rng(0)

_VALUES = {
    "normal": _RNG.standard_normal(24),
    "large": _RNG.standard_normal(24) * 1e5,
    "tiny": _RNG.standard_normal(24) * 1e-6,
    "wide range": np.geomspace(1e-3, 1e3, 24),
    "over 1e8": np.linspace(1.0, 3e8, 24),
    "integral": np.round(_RNG.standard_normal(24) * 50),
    "integral, huge range": np.array([1.0, 5e9] * 12),
    "with nan/inf/0": np.array([np.nan, np.inf, -np.inf, 0.0, 1.25, -3.5] * 4),
    "only nan/inf/0": np.array([np.nan, np.inf, 0.0] * 8),
    "zeros": np.zeros(24),
    "rounds to 10": np.array([9.99996, -0.5] * 12),
}
_SHAPES = [(), (1,), (24,), (4, 6), (2, 3, 4), (2, 1, 3, 4)]


# float16 tensors of the "large" values overflow to inf, in torch as here
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def _torch_text(s: str) -> str:
    return s.replace("torch.", "shardflow.")


def _unwrapped(s: str) -> str:
    """Suffixes joined to their line: ``dtype=shardflow.x`` is 4 characters longer than
    ``dtype=torch.x``, so it may move to a new line where torch's does not."""
    return re.sub(r",\n +(dtype=|requires_grad=|grad_fn=|size=|device=)", r", \1", s)


def _same_text(s, t) -> bool:
    return _unwrapped(repr(s)) == _unwrapped(_torch_text(repr(t)))


def _pair(values, shape, dtype: str):
    a = np.asarray(values).reshape(-1)[: int(np.prod(shape))].reshape(shape)
    return sf.tensor(a, dtype=getattr(sf, dtype)), torch.tensor(a, dtype=getattr(torch, dtype))


@pytest.mark.parametrize("name", list(_VALUES))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_float_repr_matches_torch(name, dtype):
    for shape in _SHAPES:
        s, t = _pair(_VALUES[name], shape, dtype)
        assert _same_text(s, t), (shape, repr(t))
        assert str(s) == repr(s)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "bool"])
def test_integer_and_bool_repr_matches_torch(dtype):
    values = _RNG.integers(-300, 300, 24) if dtype in ("int64", "int32") else _RNG.integers(0, 2, 24)
    for shape in _SHAPES:
        s, t = _pair(values, shape, dtype)
        assert _same_text(s, t)


@pytest.mark.parametrize("shape", [(2000,), (40, 50), (3, 400, 5), (7, 1, 200)])
def test_large_tensors_are_summarized_like_torch(shape):
    a = _RNG.standard_normal(shape).astype(np.float32)
    assert _same_text(sf.tensor(a), torch.tensor(a))
    ints = _RNG.integers(-5, 5, shape)
    assert _same_text(sf.tensor(ints), torch.tensor(ints))


def test_long_rows_wrap_at_the_line_width_like_torch():
    a = _RNG.standard_normal((2, 40)) * 1000
    assert _same_text(sf.tensor(a), torch.tensor(a))
    assert repr(sf.arange(100)) == repr(torch.arange(100))


def test_empty_tensors_and_suffixes_match_torch():
    for shape in [(0,), (2, 0), (0, 3, 1)]:
        for dtype in ("float32", "int64", "float64", "bool"):
            s = sf.zeros(shape, dtype=getattr(sf, dtype))
            t = torch.zeros(shape, dtype=getattr(torch, dtype))
            assert _same_text(s, t)
    s = sf.tensor([1.5, 2.0], requires_grad=True)
    t = torch.tensor([1.5, 2.0], requires_grad=True)
    assert repr(s) == _torch_text(repr(t))
    assert repr(s * 2).startswith("tensor([3., 4.], grad_fn=<")
    # a suffix that would pass the line width goes on its own line, as in torch
    a = np.arange(13.0) + 0.5
    s = sf.tensor(a, dtype=sf.float64, requires_grad=True)
    t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    assert repr(s) == _torch_text(repr(t)) and "\n" in repr(t)


@pytest.mark.parametrize("options", [
    dict(precision=2), dict(precision=6), dict(sci_mode=True), dict(sci_mode=False),
    dict(profile="short"), dict(profile="full"), dict(linewidth=40),
    dict(threshold=5, edgeitems=1), dict(threshold=5, edgeitems=0),
], ids=str)
def test_printoptions_match_torch(options):
    a = np.concatenate([_VALUES["normal"][:12], _VALUES["tiny"][:12]]).reshape(4, 6)
    b = _VALUES["large"].reshape(2, 3, 4)
    try:
        sf.set_printoptions(**options)
        torch.set_printoptions(**options)
        for x in (a, b, np.arange(2000.0).reshape(40, 50)):
            assert _same_text(sf.tensor(x), torch.tensor(x))
        assert sf.get_printoptions() == torch._tensor_str.get_printoptions()
    finally:
        sf.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


def test_printoptions_context_manager_restores():
    before = sf.get_printoptions()
    with sf.autograd._tensor_str.printoptions(precision=1):
        assert repr(sf.tensor(1.25)) == "tensor(1.2)"
    assert sf.get_printoptions() == before


# ---------------------------------------------------------------- f-strings and print
@pytest.mark.parametrize("value, dtype", [(10.0, "float32"), (0.123456789, "float64"), (-3, "int64"),
                                          (True, "bool"), (2.5, "bfloat16")])
@pytest.mark.parametrize("spec", ["", ".4f", ">12.2e", "^9", ".1%"])
def test_0dim_tensor_formats_like_its_number(value, dtype, spec):
    s, t = sf.tensor(value, dtype=getattr(sf, dtype)), torch.tensor(value, dtype=getattr(torch, dtype))
    try:
        expected = format(t, spec)
    except (TypeError, ValueError) as e:  # e.g. a float spec on a bool is refused by Python
        with pytest.raises(type(e)):
            format(s, spec)
        return
    assert format(s, spec) == expected


def test_fstring_of_a_loss_that_requires_grad():
    w = sf.tensor([0.5, 1.5], requires_grad=True)
    wt = torch.tensor([0.5, 1.5], requires_grad=True)
    loss, loss_t = (w * w).sum(), (wt * wt).sum()
    assert f"loss {loss:.4f} ({loss})" == f"loss {loss_t:.4f} ({loss_t})" == "loss 2.5000 (2.5)"
    assert f"{loss.item():.3f}" == "2.500"


def test_fstring_of_a_non_scalar_is_its_str_and_refuses_a_spec():
    s, t = sf.tensor([1.0, 2.5]), torch.tensor([1.0, 2.5])
    assert f"{s}" == str(s) == _torch_text(f"{t}")
    with pytest.raises(TypeError):
        f"{t:.2f}"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{s:.2f}"


def test_print_of_a_0dim_tensor_matches_torch():
    out_s, out_t = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out_s):
        print(sf.tensor(10.0), sf.tensor(0.5), [sf.tensor(3)])
    with contextlib.redirect_stdout(out_t):
        print(torch.tensor(10.0), torch.tensor(0.5), [torch.tensor(3)])
    assert out_s.getvalue() == out_t.getvalue() == "tensor(10.) tensor(0.5000) [tensor(3)]\n"


def test_parameter_formats_like_torch():
    p, pt = sf.nn.Parameter(sf.tensor(1.5)), torch.nn.Parameter(torch.tensor(1.5))
    assert f"{p}" == _torch_text(f"{pt}")
    with pytest.raises(TypeError):
        f"{pt:.2f}"
    with pytest.raises(TypeError):
        f"{p:.2f}"
