"""Edge semantics found by running the same snippets on PyTorch 2.13 and shardflow (session
29): NaN in ``median``/``sign``, empty reductions, the error type of out-of-range indices,
and how multi-result ops print. Each was silently different before."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.backend import user_warning

NAN = float("nan")
ROWS = [[1, NAN, 3, NAN], [1, 2, 3, 4.0], [NAN, 5, 1, 2]]


def _same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("dim", [0, 1])
def test_median_over_a_dim_is_nan_at_the_first_nan(dim):
    """NumPy's partition sorts NaN last, so the median skipped it (3. for [1, nan, 3])."""
    tv, ti = torch.tensor(ROWS).median(dim)
    sv, si = sf.tensor(ROWS).median(dim)
    _same(tv, sv)
    _same(ti, si)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_median_of_all_is_nan_and_its_gradient_goes_to_the_nan(dtype):
    xt = torch.tensor([1.0, NAN, 3.0, NAN], dtype=getattr(torch, dtype), requires_grad=True)
    xs = sf.tensor([1.0, NAN, 3.0, NAN], dtype=getattr(sf, dtype), requires_grad=True)
    yt, ys = xt.median(), xs.median()
    assert np.isnan(ys.item()) and np.isnan(yt.item())
    yt.backward()
    ys.backward()
    _same(xt.grad.float(), xs.grad.float())
    assert ys.grad_fn is not None and xs.median().grad_fn.name() == "MedianBackward0"


def test_median_without_nan_is_unchanged():
    x = [[3.0, 1.0, 2.0, 5.0], [4.0, 4.0, 1.0, 0.0]]
    for args in [(), (1,), (0, True)]:
        t, s = torch.tensor(x).median(*args), sf.tensor(x).median(*args)
        for a, b in zip(t if args else [t], s if args else [s]):
            _same(a, b)


def test_sign_of_nan_is_zero():
    x = [NAN, -NAN, 1.0, -0.0, -2.5]
    for dtype in ["float32", "float64", "float16", "bfloat16"]:
        t = torch.tensor(x, dtype=getattr(torch, dtype))
        s = sf.tensor(x, dtype=getattr(sf, dtype))
        _same(torch.sign(t).float(), sf.sign(s).float())
        _same(t.clone().sign_().float(), s.clone().sign_().float())
    assert sf.sign(sf.tensor(NAN)).item() == 0.0 == torch.sign(torch.tensor(NAN)).item()  # 0-d
    c = [complex(NAN, 0), 3 + 4j]
    np.testing.assert_array_equal(torch.sgn(torch.tensor(c)).numpy(), sf.sgn(sf.tensor(c)).numpy())


@pytest.mark.parametrize("case", ["mean", "mean0", "var", "std", "logsumexp", "var1"])
def test_empty_reductions_match_torch_without_numpy_warnings(case):
    def run(lib):
        f = {"mean": lambda: lib.tensor([]).mean(), "mean0": lambda: lib.zeros(0, 3).mean(0),
             "var": lambda: lib.tensor([]).var(), "std": lambda: lib.zeros(0, 2).std(0),
             "logsumexp": lambda: lib.zeros(2, 0).logsumexp(1), "var1": lambda: lib.tensor([1.0]).var()}[case]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = f()
        # (torch appends where in its C++ the warning was raised)
        return out, [(x.category, str(x.message).split(" (Triggered internally")[0]) for x in w]

    (t, tw), (s, sw) = run(torch), run(sf)
    _same(t, s)
    assert sw == tw  # no NumPy "Mean of empty slice"; torch's degrees-of-freedom UserWarning


def test_degrees_of_freedom_warning_points_at_the_caller():
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0") as rec:
        sf.tensor([2.0]).std()
    assert rec[0].filename == __file__


@pytest.mark.parametrize("name", ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select",
                                  "embedding_bag", "index_add", "index_copy", "index_fill", "take",
                                  "embedding"])
def test_out_of_range_index_raises_torch_s_exception_type(name):
    def call(lib):
        x = lib.arange(12.0).reshape(3, 4)
        F = lib.nn.functional
        return {
            "gather": lambda: lib.gather(x, 1, lib.tensor([[5]])),
            "scatter": lambda: x.scatter(1, lib.tensor([[5]]), 1.0),
            "scatter_add": lambda: x.scatter_add(1, lib.tensor([[5]]), lib.ones(1, 1)),
            "scatter_reduce": lambda: x.scatter_reduce(1, lib.tensor([[5]]), lib.ones(1, 1), "sum"),
            "index_select": lambda: x.index_select(1, lib.tensor([7])),
            "embedding_bag": lambda: F.embedding_bag(lib.tensor([[5]]), lib.ones(3, 2)),
            "index_add": lambda: x.clone().index_add_(1, lib.tensor([7]), lib.ones(3, 1)),
            "index_copy": lambda: x.clone().index_copy_(1, lib.tensor([7]), lib.ones(3, 1)),
            "index_fill": lambda: x.clone().index_fill_(1, lib.tensor([7]), 1.0),
            "take": lambda: x.take(lib.tensor([20])),
            "embedding": lambda: F.embedding(lib.tensor([5]), lib.ones(3, 2)),
        }[name]()

    with pytest.raises(Exception) as t:
        call(torch)
    with pytest.raises(Exception) as s:
        call(sf)
    assert s.type is t.type, (s.type, t.type, str(s.value))


def test_multi_result_ops_print_as_torch_return_types():
    v = [2.0, 1.0, 2.0, 3.0]
    for f in [lambda L, x: L.sort(x), lambda L, x: L.max(x, 0), lambda L, x: L.cummax(x, 0),
              lambda L, x: L.kthvalue(x, 2), lambda L, x: L.aminmax(x), lambda L, x: L.nanmedian(x, 0),
              lambda L, x: L.histogramdd(x.reshape(4, 1), bins=2)]:
        t = repr(f(torch, torch.tensor(v)))
        s = repr(f(sf, sf.tensor(v))).replace("shardflow.", "torch.")
        assert s == t


def test_selection_nodes_have_torch_s_names_after_backward():
    for f, name in [(lambda x: x.sort(1)[0], "SortBackward0"), (lambda x: x.topk(2)[0], "TopkBackward0"),
                    (lambda x: x.kthvalue(1)[0], "KthvalueBackward0"), (lambda x: x.median(1)[0], "MedianBackward1"),
                    (lambda x: x.mode(1)[0], "ModeBackward0"), (lambda x: x.nanmedian(1)[0], "NanmedianBackward1"),
                    (lambda x: x.nanmedian(), "NanmedianBackward0")]:
        for lib in (torch, sf):
            x = lib.tensor([[3.0, 1.0, 2.0]], requires_grad=True)
            y = f(x)
            y.sum().backward()
            assert y.grad_fn.name() == name and f"grad_fn=<{name}>" in repr(y)


def test_float_of_a_graph_tensor_warns_once_with_grad_mode_on(monkeypatch):
    """torch 2.13's ``TORCH_WARN_ONCE``: ``float(loss)``/``complex(loss)`` of a tensor that
    requires grad warns (not ``.item()``, ``int()``, or under ``no_grad``), once per process."""

    monkeypatch.setattr(user_warning, "_given", set())
    y = (sf.tensor([1.0], requires_grad=True) * 2).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y.item(), int(y), bool(y)
        with sf.no_grad():
            float(y)
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar") as rec:
        assert float(y) == 2.0
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert complex(y) == 2 + 0j  # once per process


def test_complex_of_a_tensor():
    assert complex(sf.tensor(2.0)) == complex(torch.tensor(2.0))
    assert complex(sf.tensor(1 + 2j)) == complex(torch.tensor(1 + 2j))


def test_lbfgs_does_not_warn_about_its_closure_loss(monkeypatch):

    monkeypatch.setattr(user_warning, "_given", set())
    w = sf.nn.Parameter(sf.ones(2))
    opt = sf.optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step(closure)


def test_grad_of_a_non_leaf_warns_as_torch():
    for lib in (torch, sf):
        w = lib.ones(2, requires_grad=True)
        y = w * 2
        with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf"):
            assert y.grad is None
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is None and w.grad is None and lib.ones(2).grad is None


def test_python_types_as_dtypes_are_torch_s():
    """``dtype=float`` is float64 (and ``complex`` complex128) in torch whatever the default
    dtype; it was the default float (float32) here."""
    for py in (float, int, bool, complex):
        assert str(sf.ones(2, dtype=py).dtype).split(".")[-1] == str(torch.ones(2, dtype=py).dtype).split(".")[-1]
        assert str(sf.ones(2).to(py).dtype).split(".")[-1] == str(torch.ones(2).to(py).dtype).split(".")[-1]


def test_shift_and_in_place_bitwise_operators():
    """``t << 1``, ``1 << t``, ``t >>= 1`` raised TypeError; ``m &= k`` made a new tensor (a
    view of ``m`` did not see it)."""
    for lib in (torch, sf):
        t = lib.tensor([5, -6])
        assert (t << 1).tolist() == [10, -12] and (1 << lib.tensor([3])).tolist() == [8]
        assert (t >> 1).tolist() == [2, -3] and (64 >> lib.tensor([2])).tolist() == [16]
        u = t.clone()
        u <<= 2
        u >>= 1
        assert u.tolist() == [10, -12]
        m = lib.tensor([True, True, False])
        view = m[:2]
        m &= lib.tensor([True, False, True])
        m |= lib.tensor([False, False, True])
        m ^= lib.tensor([True, False, False])
        assert m.tolist() == [False, False, True] and view.tolist() == [False, False]


@pytest.mark.parametrize("call", [lambda L: L.tensor([True]) - L.tensor([True]),
                                  lambda L: L.sub(L.tensor([True, False]), True),
                                  lambda L: -L.tensor([True]), lambda L: L.tensor([False]).neg()],
                         ids=["bool-bool", "sub-bool-scalar", "-bool", "neg"])
def test_bool_subtraction_and_negation_raise_torchs_runtime_error(call):
    # NumPy's TypeError came through (session 30); torch raises RuntimeError naming `^` / `~`
    for lib in (torch, sf):
        with pytest.raises(RuntimeError, match="bool tensor"):
            call(lib)


def test_functional_errors_have_torchs_types():
    # session 30: BCE's range check and functional conv's strided 'same' raised ValueError (torch:
    # RuntimeError; both are caught now), F.batch_norm(momentum=None) updated nothing silently
    x = np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3)
    for lib in (torch, sf):
        F = lib.nn.functional
        with pytest.raises(RuntimeError, match="between 0 and 1"):
            F.binary_cross_entropy(lib.tensor(x), lib.ones(2, 3))
        with pytest.raises(RuntimeError, match="strided convolutions"):
            F.conv1d(lib.ones(1, 3, 5), lib.ones(2, 3, 3), padding="same", stride=2)
        with pytest.raises(TypeError, match="momentum"):
            F.batch_norm(lib.tensor(x), lib.zeros(3), lib.ones(3), training=True, momentum=None)


def test_same_padding_with_an_odd_total_warns_once():

    user_warning._given.discard("conv_uneven_same")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sf.nn.functional.conv1d(sf.ones(1, 3, 5), sf.ones(2, 3, 3), padding="same")  # even total: silent
        a = sf.nn.functional.conv1d(sf.ones(1, 3, 5), sf.ones(2, 3, 2), padding="same")
        sf.nn.functional.conv1d(sf.ones(1, 3, 5), sf.ones(2, 3, 2), padding="same")
    assert [str(w.message)[:40] for w in rec] == ["Using padding='same' with even kernel le"]
    b = torch.nn.functional.conv1d(torch.ones(1, 3, 5), torch.ones(2, 3, 2), padding="same")
    assert a.tolist() == b.tolist()
