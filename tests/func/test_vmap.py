"""torch.func.vmap (shardflow/func/_vmap.py: a loop over samples) against torch.func.vmap."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.func._compare import compare, t

R = np.random.default_rng(0)
A = R.standard_normal((4, 3))
B = R.standard_normal((3, 4))
V = R.standard_normal(3)


def test_vmap_default_in_out_dims_matches_torch():
    compare(lambda m: m.func.vmap(lambda x: (x * x).sum())(t(m, A)))
    compare(lambda m: m.func.vmap(m.dot)(t(m, A), t(m, B.T)))


@pytest.mark.parametrize("in_dims,out_dims", [((0, None), 0), ((1, None), 1), ((None, 0), -1), ((-1, None), 0)])
def test_vmap_in_dims_and_out_dims_match_torch(in_dims, out_dims):
    x = B if in_dims[0] in (1, -1) else A

    def program(m):
        a = t(m, x) if in_dims[0] is not None else t(m, V)
        b = t(m, V) if in_dims[1] is None else t(m, A)
        return m.func.vmap(lambda p, q: p * q + 1.0, in_dims=in_dims, out_dims=out_dims)(a, b)

    compare(program)


def test_vmap_pytree_inputs_outputs_and_kwargs_match_torch():
    def f(d, scale, *, shift):
        # d: {"a": (3,), "b": (3,)}; scale: (3,), unmapped kwargs
        return {"s": (d["a"] * scale).sum() + shift, "pair": (d["a"] - d["b"], d["b"] * 2.0)}

    def program(m):
        d = {"a": t(m, A), "b": t(m, B.T)}
        return m.func.vmap(f, in_dims=({"a": 0, "b": 0}, None), out_dims={"s": 0, "pair": (1, 0)})(
            d, t(m, V), shift=3.0)

    compare(program)


def test_nested_vmap_matches_torch():
    def program(m):
        outer = m.func.vmap(m.func.vmap(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))
        return outer(t(m, V), t(m, A))  # (4, 3, 3)

    compare(program)


def test_vmap_out_dims_none_for_an_unmapped_output_matches_torch():
    compare(lambda m: m.func.vmap(lambda x, y: (x * 2.0, y), in_dims=(0, None), out_dims=(0, None))(
        t(m, A), t(m, V)))


def test_vmap_gradient_flows_to_mapped_input_like_torch():
    def program(m):
        x = t(m, A, requires_grad=True)
        m.func.vmap(lambda r: (r * r * r).sum())(x).sum().backward()
        return x.grad

    compare(program)


ERROR_CASES = {
    "in_dims_structure": (lambda m: m.func.vmap(lambda x, y: x, in_dims=(0,))(t(m, A), t(m, A)),
                          "in_dims is not compatible with the structure of `inputs`"),
    "in_dims_type": (lambda m: m.func.vmap(lambda x: x, in_dims=[0])(t(m, A)), "expected `in_dims` to be int"),
    "size_mismatch": (lambda m: m.func.vmap(lambda x, y: x + y.sum())(t(m, A), t(m, B)),
                      "Expected all tensors to have the same size in the mapped dimension, got sizes [4, 3]"),
    "in_dim_range": (lambda m: m.func.vmap(lambda x: x, in_dims=2)(t(m, A)), "expected in_dim to satisfy -2 <= in_dim < 2"),
    "non_tensor": (lambda m: m.func.vmap(lambda x, n: x * n)(t(m, A), 3), "We cannot vmap over non-Tensor arguments"),
    "no_inputs": (lambda m: m.func.vmap(lambda: 1)(), "got no inputs"),
    "nothing_mapped": (lambda m: m.func.vmap(lambda x: x, in_dims=(None,))(t(m, A)), "Expected at least one Tensor to vmap over"),
    "non_tensor_output": (lambda m: m.func.vmap(lambda x: 3)(t(m, A)), "must only return Tensors, got type <class 'int'>"),
    "out_dims_type": (lambda m: m.func.vmap(lambda x: x, out_dims="a")(t(m, A)), "`out_dims` must be an int, None"),
    "out_dims_structure": (lambda m: m.func.vmap(lambda x: (x, x), out_dims=(0, 0, 0))(t(m, A)),
                           "out_dims is not compatible with the structure of `outputs`"),
    "batched_out_dim_none": (lambda m: m.func.vmap(lambda x: x, out_dims=None)(t(m, A)),
                             "can not return a BatchedTensor when out_dim is None"),
    "random_in_error_mode": (lambda m: m.func.vmap(lambda x: x + m.randn(3, dtype=m.float64))(t(m, A)),
                             "called random operation while in randomness error mode"),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_vmap_errors_like_torch(name):
    program, message = ERROR_CASES[name]
    for m in (torch, sf):
        with pytest.raises((ValueError, RuntimeError)) as info:
            program(m)
        assert message in str(info.value), (m.__name__, str(info.value))


def test_vmap_argument_checks_like_torch():
    for m in (torch, sf):
        with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
            m.func.vmap(lambda x: x, randomness="sometimes")
        with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
            m.func.vmap(lambda x: x, chunk_size=0)(t(m, A))


def test_vmap_randomness_same_and_different():
    sf.manual_seed(0)
    same = sf.func.vmap(lambda x: x + sf.randn(3, dtype=sf.float64), randomness="same")(sf.zeros(4, 3, dtype=sf.float64))
    assert all(np.array_equal(same[i].numpy(), same[0].numpy()) for i in range(4))
    sf.manual_seed(0)
    expected = sf.randn(3, dtype=sf.float64)  # 'same' draws what one call would draw
    np.testing.assert_array_equal(same[0].numpy(), expected.numpy())
    different = sf.func.vmap(lambda x: x + sf.randn(3, dtype=sf.float64), randomness="different")(
        sf.zeros(4, 3, dtype=sf.float64))
    assert not np.array_equal(different[0].numpy(), different[1].numpy())


def test_vmap_size_zero_dimension_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="mapped dimension has size 0"):
        sf.func.vmap(lambda x: x)(sf.zeros(0, 3))


def test_torch_vmap_top_level_name():
    assert sf.vmap is sf.func.vmap


def test_vmap_random_draw_in_a_later_sample_is_caught_in_error_mode():
    def f(x):
        return x + sf.randn(3, dtype=sf.float64) if bool(x.sum() > 100) else x

    data = np.zeros((4, 3))
    data[2] = 50.0
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        sf.func.vmap(f)(sf.tensor(data))
