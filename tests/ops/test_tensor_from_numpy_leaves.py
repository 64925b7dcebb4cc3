"""``torch.tensor`` / ``as_tensor`` of nested sequences holding NumPy arrays, NumPy scalars or
Tensors: the dtype is torch's (each leaf's own dtype, Python numbers at the defaults, all
promoted with ``promote_types``), and torch's once-per-process warning for a list of
``numpy.ndarray`` s (``shardflow/autograd/sequence_data.py``). Found by graykode/nlp-tutorial,
whose programs pass lists of ``np.eye(n)[ids]`` rows to ``torch.Tensor`` / ``torch.tensor``."""

import warnings

import numpy as np
import pytest
import torch

import shardflow
from shardflow.autograd import sequence_data
from shardflow.backend import user_warning

CASES = [
    "[np.eye(3)[0], np.eye(3)[1]]",  # float64 rows: float64 (NumPy's list inference said float32)
    "[[np.ones(2)], [np.ones(2)]]",
    "[np.ones(2, np.float32), np.ones(2, np.float64)]",
    "[np.ones(2, np.int64), np.ones(2, np.float32)]",  # torch's promotion: float32, not NumPy's float64
    "[np.ones(2, np.int32), np.ones(2, np.int32)]",
    "[np.ones(2, np.float16)]",
    "[np.ones(2, bool), np.zeros(2, bool)]",
    "[np.ones(2), [1.0, 2.0]]",
    "[[1, 2], np.ones(2, np.int8)]",
    "(np.ones(2), np.ones(2))",
    "[np.float64(1.0), 2.0]",
    "[1, np.float64(2.0)]",
    "[np.int32(1), np.int32(2)]",
    "[np.uint8(1), np.int8(2)]",  # torch's promote_types(uint8, int8): int16
    "[np.float32(1.0), 2.0]",
    "[np.bool_(True), False]",
    "[np.complex64(1j), 2.0]",
    "[1.0, 2.0]",  # no NumPy leaf: unchanged
    "[[1, 2], [3, 4]]",
    "[lib.tensor(1.0, dtype=lib.float64), 2.0]",  # a Tensor leaf's dtype counts too
    "[lib.tensor(1, dtype=lib.int32), lib.tensor(2, dtype=lib.int32)]",
]


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list")
@pytest.mark.parametrize("expr", CASES)
@pytest.mark.parametrize("ctor", ["tensor", "as_tensor", "Tensor", "DoubleTensor"])
def test_dtype_and_values_like_torch(expr, ctor):
    th = getattr(torch, ctor)(eval(expr, {"np": np, "lib": torch}))
    sf = getattr(shardflow, ctor)(eval(expr, {"np": np, "lib": shardflow}))
    assert str(sf.dtype).split(".")[-1] == str(th.dtype).split(".")[-1], (expr, ctor, sf.dtype, th.dtype)
    np.testing.assert_array_equal(sf.numpy(), th.numpy())


@pytest.mark.parametrize("expr", [e for e in CASES if "float" not in e and "bool" not in e and "complex" not in e])
def test_long_tensor_of_integer_leaves(expr):
    """``LongTensor`` of integer leaves (torch refuses NumPy float32 / float16 / bool leaves
    there with a TypeError, which shardflow does not copy: it casts them)."""
    th = torch.LongTensor(eval(expr, {"np": np, "lib": torch}))
    sf = shardflow.LongTensor(eval(expr, {"np": np, "lib": shardflow}))
    assert str(sf.dtype) == "shardflow.int64" and str(th.dtype) == "torch.int64"
    np.testing.assert_array_equal(sf.numpy(), th.numpy())


def test_default_dtype_counts_for_python_floats():
    """A Python float leaf is the default dtype before promotion, as in torch."""
    data = lambda: [np.float16(1.0), 0.5]  # noqa: E731
    for lib in (torch, shardflow):
        saved = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            got = lib.tensor(data()).dtype
        finally:
            lib.set_default_dtype(saved)
        assert str(got).endswith("float64"), (lib.__name__, got)


def _warnings_of(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return [str(w.message) for w in caught]


def test_list_of_ndarrays_warns_once_per_process(monkeypatch):
    """torch's ``TORCH_WARN_ONCE``: the first copy of an ndarray item of a sequence warns
    (any constructor, with or without ``dtype=``), at the user's line; later ones do not,
    even under ``simplefilter("always")``. The text is torch's (checked against torch in a
    fresh process when this was written: torch's own flag is process-wide, so a test in a
    process where torch already warned cannot see it again)."""
    monkeypatch.setattr(user_warning, "_given", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shardflow.Tensor([np.eye(3)[0], np.eye(3)[1]])
    assert [str(w.message) for w in caught] == [sequence_data.LIST_OF_NDARRAYS]
    assert caught[0].category is UserWarning and caught[0].filename == __file__
    assert sequence_data.LIST_OF_NDARRAYS.startswith("Creating a tensor from a list of numpy.ndarrays is "
                                                     "extremely slow. Please consider converting the list to a "
                                                     "single numpy.ndarray with numpy.array() before converting")
    assert _warnings_of(lambda: shardflow.tensor([np.ones(2)])) == []


@pytest.mark.parametrize("make", [
    lambda: shardflow.tensor([np.ones(2), np.ones(2)]),
    lambda: shardflow.as_tensor([[np.ones(2)]]),
    lambda: shardflow.LongTensor([np.ones(2)]),
    lambda: shardflow.tensor([[1.0, 2.0], np.ones(2)], dtype=shardflow.float32),
])
def test_each_constructor_warns(make, monkeypatch):
    monkeypatch.setattr(user_warning, "_given", set())
    assert _warnings_of(make) == [sequence_data.LIST_OF_NDARRAYS]


@pytest.mark.parametrize("make", [
    lambda: shardflow.tensor([np.ones(0)]),  # no elements: torch copies nothing and says nothing
    lambda: shardflow.tensor([np.float64(1.0), np.float64(2.0)]),  # NumPy scalars, not arrays
    lambda: shardflow.tensor(np.ones((2, 2))),  # one array, not a list of them
    lambda: shardflow.tensor([shardflow.tensor(1.0), 2.0]),
])
def test_no_warning_without_an_ndarray_item(make, monkeypatch):
    monkeypatch.setattr(user_warning, "_given", set())
    assert _warnings_of(make) == []


def test_unsupported_promotion_raises_like_torch():
    """A uint16 leaf beside a Python int: torch's promotion refuses it, so does shardflow."""
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported"):
            lib.tensor([np.uint16(1), 2])


@pytest.mark.parametrize("expr", [
    "lib.tensor([lib.ones(1), lib.ones(1)])",  # shape (2,): each Tensor is one scalar (was (2, 1))
    "lib.tensor([lib.ones(1, 1), lib.tensor(2.0)])",
    "lib.as_tensor([[lib.ones(1)], [lib.ones(1) * 3]])",
    "lib.Tensor([lib.ones(1), lib.ones(1)])",
    "lib.FloatTensor([lib.ones(1), lib.ones(1) * 2])",
    "lib.tensor([lib.ones(1, requires_grad=True) * 2, 1.0])",
])
def test_tensor_items_are_scalars_like_torch(expr):
    """A Tensor inside the data is one scalar leaf, as in torch (``torch.tensor([loss1,
    loss2])`` of shape-(1,) losses is a vector, not a column)."""
    th, sf = eval(expr, {"lib": torch}), eval(expr, {"lib": shardflow})
    assert tuple(sf.shape) == tuple(th.shape) and str(sf.dtype).split(".")[-1] == str(th.dtype).split(".")[-1]
    np.testing.assert_array_equal(sf.numpy(), th.detach().numpy())


@pytest.mark.parametrize("expr", ["lib.tensor([lib.ones(2), lib.ones(2)])", "lib.tensor([[lib.ones(2)]])",
                                  "lib.tensor([lib.ones(0)])", "lib.as_tensor([lib.ones(3)])"])
def test_multi_element_tensor_items_raise_like_torch(expr):
    for lib in (torch, shardflow):
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            eval(expr, {"lib": lib})
