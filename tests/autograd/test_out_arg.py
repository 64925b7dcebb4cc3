"""``out=`` on every op (shardflow/autograd/out_arg.py) against torch 2.13: the result is
written into ``out`` (same object returned, resized, cast), several results into a tuple,
factories take ``out``'s dtype, and torch's refusals (autograd, casts) are ours too.

Before: ``torch.add(a, b, out=c)`` and 55 other ops (the FFTs, most of linalg, tensordot)
declared ``out`` and ignored it, leaving ``c`` unchanged; most other ops refused it."""

import inspect
import re
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.autograd import dispatch

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
SQ = (RNG.standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float32)
SPD = (SQ @ SQ.T).astype(np.float32)
BATCH = RNG.standard_normal((2, 3, 4)).astype(np.float32)
BATCH2 = RNG.standard_normal((2, 4, 5)).astype(np.float32)


def both(fn_name, *arrays, **kwargs):
    """The op's args in each library: (torch tensors, shardflow tensors)."""
    return [torch.tensor(a) for a in arrays], [sf.tensor(a) for a in arrays]


def lookup(lib, name):
    obj = lib
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


# name, input arrays, extra positional args, kwargs, out dtype (None: float32)
ONE_RESULT = [
    ("add", (A, B), (), {"alpha": 2}, None),
    ("sub", (A, B), (), {}, None),
    ("mul", (A, B), (), {}, None),
    ("div", (A, B), (), {"rounding_mode": "floor"}, None),
    ("matmul", (A, B.T.copy()), (), {}, None),
    ("mm", (A, B.T.copy()), (), {}, None),
    ("bmm", (BATCH, BATCH2), (), {}, None),
    ("addmm", (SQ, A[:, :3].copy(), SQ), (), {"beta": 0.5}, None),
    ("exp", (A,), (), {}, None),
    ("sigmoid", (A,), (), {}, None),
    ("abs", (A,), (), {}, None),
    ("sum", (A,), (1,), {}, None),
    ("mean", (A,), (0,), {"keepdim": True}, None),
    ("cumsum", (A,), (1,), {}, None),
    ("clamp", (A,), (), {"min": -0.5, "max": 0.5}, None),
    ("maximum", (A, B), (), {}, None),
    ("pow", (A,), (2,), {}, None),
    ("argmax", (A,), (1,), {}, "int64"),
    ("eq", (A, A), (), {}, "bool"),
    ("gt", (A, B), (), {}, "float32"),          # bool result into a float out: a cast torch allows
    ("tensordot", (A, B), (), {"dims": ([1], [1])}, None),
    ("linalg.inv", (SQ,), (), {}, None),
    ("linalg.cholesky", (SPD,), (), {}, None),
    ("linalg.pinv", (A,), (), {}, None),
    ("linalg.solve_triangular", (np.triu(SQ).copy(), A[:, :3].copy()), (), {"upper": True}, None),
    ("linalg.eigvalsh", (SPD,), (), {}, None),
    ("fft.rfft", (A,), (), {}, "complex64"),
    ("fft.irfft", (A,), (), {}, None),
]


@pytest.mark.parametrize("name, arrays, args, kwargs, out_dtype", ONE_RESULT, ids=[c[0] for c in ONE_RESULT])
def test_result_written_into_out(name, arrays, args, kwargs, out_dtype):
    dt = out_dtype or "float32"
    tx, sx = both(name, *arrays)
    t_out, s_out = torch.empty(0, dtype=getattr(torch, dt)), sf.empty(0, dtype=getattr(sf, dt))
    t_ret = lookup(torch, name)(*tx, *args, **kwargs, out=t_out)
    s_ret = lookup(sf, name)(*sx, *args, **kwargs, out=s_out)
    assert t_ret is t_out and s_ret is s_out
    assert tuple(s_out.shape) == tuple(t_out.shape) and s_out.dtype.name == str(t_out.dtype)[6:]
    np.testing.assert_allclose(s_out.numpy(), t_out.numpy(), rtol=1e-5, atol=1e-5)


def test_out_keeps_its_identity_views_and_version():
    x, y = sf.tensor(A), sf.tensor(B)
    out = sf.zeros(3, 4)
    row = out[1]  # a view of out sees what is written
    v = out._version
    sf.add(x, y, out=out)
    np.testing.assert_allclose(row.numpy(), A[1] + B[1], rtol=1e-6)
    assert out._version > v


def test_out_may_be_an_input():
    x = sf.tensor(A)
    sf.mul(x, 2.0, out=x)
    np.testing.assert_allclose(x.numpy(), 2 * A)


@pytest.mark.parametrize("lib", [torch, sf], ids=["torch", "shardflow"])
def test_resize_warns_only_when_out_had_elements(lib):
    x = lib.tensor(A)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.exp(x, out=lib.empty(0))
    assert not [w for w in caught if "resized" in str(w.message)]
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        out = lib.exp(x, out=lib.empty(5))
    assert tuple(out.shape) == (3, 4)


def test_factories_take_outs_dtype():
    for name, args in [("zeros", (3,)), ("ones", (2, 2)), ("arange", (5,)), ("full", ((2,), 7)),
                       ("linspace", (0, 4, 5)), ("eye", (3,))]:
        for dt in ("int64", "float64"):
            t = getattr(torch, name)(*args, out=torch.empty(0, dtype=getattr(torch, dt)))
            s = getattr(sf, name)(*args, out=sf.empty(0, dtype=getattr(sf, dt)))
            assert s.dtype.name == dt == str(t.dtype)[6:], (name, dt)
            np.testing.assert_array_equal(s.numpy(), t.numpy())
    s = sf.randn(2, 3, out=sf.empty(0, dtype=sf.float64))
    assert s.dtype == sf.float64 and tuple(s.shape) == (2, 3)


def test_several_results_into_a_tuple():
    tx, sx = torch.tensor(A), sf.tensor(A)
    for name, args in [("max", (1,)), ("sort", (1,)), ("topk", (2,)), ("min", (0, True))]:
        t_out = (torch.empty(0), torch.empty(0, dtype=torch.int64))
        s_out = (sf.empty(0), sf.empty(0, dtype=sf.int64))
        t_ret = getattr(torch, name)(tx, *args, out=t_out)
        s_ret = getattr(sf, name)(sx, *args, out=s_out)
        assert s_ret[0] is s_out[0] and s_ret[1] is s_out[1]
        # named results as torch's (whose type is the out variant's, ``return_types.max_out``)
        assert t_ret.values is t_out[0] and s_ret.values is s_out[0] and s_ret.indices is s_out[1]
        np.testing.assert_allclose(s_out[0].numpy(), t_out[0].numpy())
        np.testing.assert_array_equal(s_out[1].numpy(), t_out[1].numpy())
    # linalg: singular values (the vectors' signs are the LAPACK driver's choice)
    u, s, vh = sf.empty(0), sf.empty(0), sf.empty(0)
    sf.linalg.svd(sf.tensor(SQ), out=(u, s, vh))
    np.testing.assert_allclose(s.numpy(), torch.linalg.svdvals(torch.tensor(SQ)).numpy(), rtol=1e-5)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ vh.numpy(), SQ, atol=1e-5)


def test_refusals_match_torch():
    # a float result cannot go into an integer out
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.exp(torch.tensor(A), out=torch.empty(0, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        sf.exp(sf.tensor(A), out=sf.empty(0, dtype=sf.int64))
    # autograd: under grad mode an input that requires grad is refused, before out changes
    for lib in (torch, sf):
        x = lib.tensor(A, requires_grad=True)
        out = lib.zeros(3, 4)
        with pytest.raises(RuntimeError, match=r"functions with out=\.\.\. arguments don't support automatic "
                                               "differentiation, but one of the arguments requires grad"):
            lib.mul(x, 2, out=out)
        assert float(out.abs().sum()) == 0.0
        with lib.no_grad():
            lib.mul(x, 2, out=out)
        np.testing.assert_allclose(out.numpy(), 2 * A)
    with pytest.raises(TypeError, match="tuple of 2 tensors"):
        sf.max(sf.tensor(A), 1, out=sf.empty(0))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        sf.exp(sf.tensor(A), out=np.zeros((3, 4)))


def test_out_none_is_no_out():
    assert np.allclose(sf.add(sf.tensor(A), sf.tensor(B), out=None).numpy(), A + B)


def test_every_op_that_declares_out_uses_it():
    """An op that declares ``out`` handles it itself (the routed form leaves it alone), so a
    declared ``out`` that the body never reads would be silently ignored again."""
    silent = []
    for name, func in sorted(dispatch._PLAIN.items()):
        code = getattr(func, "__code__", None)
        if code is None or "out" not in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            continue
        src = inspect.getsource(func)
        body = src[re.search(r"\)\s*(->[^:]*)?:\s*\n", src).end():]
        if not re.search(r"\bout\b", body):
            silent.append(name)
    assert not silent, f"these ops declare out= and never read it: {silent}"
