"""Shape/index behaviour the op-spec table cannot express: views sharing memory and version
counters, in-place indexing under autograd, and error messages. PyTorch is the reference."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(shape, seed=0, requires_grad=True):
    v = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sf.tensor(v, requires_grad=requires_grad), torch.tensor(v, requires_grad=requires_grad)


# ---------------------------------------------------------------------------- views
@pytest.mark.parametrize("make", [
    lambda x: x.view(6, 4),
    lambda x: x.reshape(-1),
    lambda x: x.permute(2, 0, 1),
    lambda x: x.transpose(0, 1),
    lambda x: x.unsqueeze(1),
    lambda x: x[1:, ::2],
    lambda x: x[0],
    lambda x: x[..., 1],
    lambda x: x.narrow(2, 1, 2),
    lambda x: x.split(1)[1],
    lambda x: x.chunk(3, 1)[0],
    lambda x: x.unbind(2)[3],
    lambda x: x.flatten(1),
    lambda x: x.movedim(0, -1),
    lambda x: x[:, :1].squeeze(1),
], ids=["view", "reshape", "permute", "transpose", "unsqueeze", "slice", "int", "ellipsis",
        "narrow", "split", "chunk", "unbind", "flatten", "movedim", "squeeze"])
def test_views_share_memory_and_version(make):
    x = sf.zeros(2, 3, 4)
    y = make(x)
    assert y._version_counter is x._version_counter
    y.fill_(7.0)  # writes through the view
    assert float(x.sum()) == float(y.numel()) * 7.0
    assert x._version == 1


@pytest.mark.parametrize("make", [
    lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: x[[0, 1]], lambda x: x[x > 0],
    lambda x: x.repeat(1, 2, 1), lambda x: x.transpose(0, 1).reshape(-1),
], ids=["flip", "roll", "adv_index", "mask", "repeat", "reshape_copy"])
def test_copies_do_not_alias(make):
    x = sf.ones(2, 3, 4)
    y = make(x)
    assert y._version_counter is not x._version_counter
    y.fill_(0.0)
    assert float(x.sum()) == 24.0


def test_view_raises_when_not_viewable_reshape_copies():
    x = sf.randn(2, 3)
    xt = x.t()
    with pytest.raises(RuntimeError, match="view size is not compatible.*reshape"):
        xt.view(6)
    np.testing.assert_array_equal(xt.reshape(6).numpy(), x.numpy().T.reshape(6))
    with pytest.raises(RuntimeError, match=r"shape '\[-1, 4\]' is invalid for input of size 6"):
        x.view(-1, 4)


def test_modifying_a_view_after_saving_is_caught():
    x = sf.randn(3, 4, requires_grad=True)
    y = x * 1
    z = (y * y).sum()  # saves y
    v = y[1:]  # a view of y: shares its version counter
    with sf.no_grad():
        v.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# ---------------------------------------------------------------------------- setitem semantics
def test_setitem_no_grad_writes_in_place_and_bumps_version():
    x = sf.zeros(3, 4)
    row = x[1]
    x[1, 1:3] = 5.0
    assert row.numpy().tolist() == [0.0, 5.0, 5.0, 0.0]
    assert x._version == 1 and row._version == 1
    x[sf.tensor([0, 2])] = sf.tensor([1.0, 2.0, 3.0, 4.0])
    t = torch.zeros(3, 4)
    t[1, 1:3] = 5.0
    t[torch.tensor([0, 2])] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), t.numpy())


@pytest.mark.parametrize("index", [
    (slice(1, 3), [0, 2]), ([1, 2, 0],), (Ellipsis, 1), "mask", (0, slice(None)),
], ids=["mixed", "list", "ellipsis", "mask", "row"])
def test_setitem_grad_flows_to_old_tensor_and_value(index):
    xs, xt = _pair((3, 4))
    if isinstance(index, str):
        mask = xs.numpy() > 0
        index_s, index_t = sf.tensor(mask), torch.tensor(mask)
        n = int(mask.sum())
        shape = (n,)
    else:
        index_s = index_t = index
        shape = tuple(np.zeros((3, 4))[index].shape)
    vs, vt = _pair(shape, seed=1)
    ys, yt = xs * 2, xt * 2
    ys[index_s] = vs * 3
    yt[index_t] = vt * 3
    w = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    (ys * sf.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ys.detach().numpy(), yt.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(vs.grad.numpy(), vt.grad.numpy(), rtol=1e-6)
    assert ys.grad_fn is not None


def test_setitem_into_buffer_that_does_not_require_grad():
    v = sf.randn(4, requires_grad=True)
    buf = sf.zeros(3, 4)
    buf[1] = v
    assert buf.requires_grad
    (buf * buf).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), 2 * v.detach().numpy(), rtol=1e-6)


def test_setitem_on_leaf_requiring_grad_raises_without_changing_it():
    x = sf.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 5.0
    assert x.numpy().tolist() == [1.0, 1.0, 1.0]
    with sf.no_grad():
        x[0] = 5.0
    assert x.numpy().tolist() == [5.0, 1.0, 1.0]


def test_setitem_casts_value_and_checks_shape():
    x = sf.zeros(2, 3, dtype=sf.int64)
    x[0] = sf.tensor([1.7, 2.2, 3.9])
    assert x.numpy()[0].tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[4\].*\[3\]"):
        x[1] = sf.ones(4)
    assert x.numpy()[1].tolist() == [0, 0, 0]


# ---------------------------------------------------------------------------- index errors
def test_float_index_is_rejected():
    x = sf.randn(3, 4)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors, got Float"):
        x[sf.tensor([0.0, 1.0])]
    with pytest.raises(IndexError, match="got Float"):
        sf.index_select(x, 0, sf.tensor([0.0]))
    with pytest.raises(IndexError, match="got Double"):
        sf.gather(x, 0, sf.tensor([[0.0]], dtype=sf.float64))


@pytest.mark.parametrize("op", [
    lambda x: x[5],
    lambda x: x[:, -6],
    lambda x: x[sf.tensor([0, 3])],
    lambda x: x[:, [1, 9]],
    lambda x: sf.gather(x, 1, sf.tensor([[0], [5], [1]])),
    lambda x: sf.index_select(x, 1, sf.tensor([7])),
    lambda x: sf.take_along_dim(x, sf.tensor([[5]]), 1),
], ids=["int", "neg_int", "tensor", "list_dim1", "gather", "index_select", "take_along_dim"])
def test_out_of_range_index_names_value_dim_and_size(op, request):
    x = sf.randn(3, 5)
    # torch's types: IndexError for indexing, RuntimeError from gather's/index_select's kernels
    kind = RuntimeError if request.node.callspec.id in ("gather", "index_select") else IndexError
    with pytest.raises(kind, match=r"index -?\d+ is out of bounds for dimension \d with size \d"):
        op(x)


def test_out_of_range_reports_the_right_dim():
    x = sf.randn(3, 5)
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 1 with size 5"):
        x[:, [1, 9]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[sf.tensor([0, 3])]


@pytest.mark.parametrize("op", [
    lambda x: x.__setitem__((slice(None), [0, 8]), 1.0),
    lambda x: x.scatter_(1, sf.tensor([[0], [6], [0]]), 1.0),
    lambda x: x.index_add_(0, sf.tensor([0, 3]), sf.ones(2, 5)),
    lambda x: x.scatter_add_(0, sf.tensor([[4, 0, 0, 0, 0]]), sf.ones(1, 5)),
], ids=["setitem", "scatter_", "index_add_", "scatter_add_"])
def test_out_of_range_in_place_ops_change_nothing(op):
    x = sf.zeros(3, 5)
    with pytest.raises((IndexError, RuntimeError), match="out of bounds"):  # torch's type per op
        op(x)
    assert not x.numpy().any() and x._version == 0


def test_negative_step_and_bad_mask():
    x = sf.randn(4, 3)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not match"):
        x[sf.tensor([True, False, True])]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill(sf.ones(4, 3), 0.0)


def test_negative_indices_wrap_like_torch():
    xs, xt = _pair((4, 3), requires_grad=False)
    np.testing.assert_array_equal(xs[sf.tensor([-1, 0, -4])].numpy(), xt[torch.tensor([-1, 0, -4])].numpy())
    np.testing.assert_array_equal(xs[-2, -1].numpy(), xt[-2, -1].numpy())
    np.testing.assert_array_equal(xs[sf.tensor(2)].numpy(), xt[torch.tensor(2)].numpy())


# ---------------------------------------------------------------------------- shape errors
def test_cat_error_names_shapes():
    with pytest.raises(RuntimeError, match=r"except in dimension 1.*\(2, 3\), \(3, 3\)"):
        sf.cat([sf.zeros(2, 3), sf.zeros(3, 3)], dim=1)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size"):
        sf.stack([sf.zeros(2), sf.zeros(3)])


def test_cat_promotes_dtypes_like_torch():
    for a, b in [(sf.int64, sf.float32), (sf.float16, sf.float32), (sf.bool, sf.int32), (sf.int8, sf.uint8)]:
        out = sf.cat([sf.zeros(2, dtype=a), sf.ones(2, dtype=b)])
        ta, tb = getattr(torch, str(a).split(".")[-1]), getattr(torch, str(b).split(".")[-1])
        ref = torch.cat([torch.zeros(2, dtype=ta), torch.ones(2, dtype=tb)])
        assert str(out.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
        np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_shape_op_errors():
    x = sf.randn(2, 3)
    with pytest.raises(RuntimeError, match="expanded size of the tensor"):
        x.expand(2, 4)
    with pytest.raises(RuntimeError, match="repeat dims.*can not be smaller"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match="permute"):
        x.permute(0)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 3"):
        x.split([1, 1], dim=1)
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        x.narrow(1, 2, 2)
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        sf.pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        sf.randn(2, 2, 2).t()


def test_chunk_rule_matches_torch():
    for n in range(0, 9):
        for c in range(1, 6):
            s = [tuple(p.shape) for p in sf.chunk(sf.zeros(n, 2), c)]
            t = [tuple(p.shape) for p in torch.chunk(torch.zeros(n, 2), c)]
            assert s == t, (n, c)


# ---------------------------------------------------------------------------- scatter / embedding extras
def test_scatter_with_src_larger_than_index():
    """PyTorch 2.13's own backward rejects this case, so compare to a NumPy computation."""
    a = sf.randn(3, 4, requires_grad=True)
    src = sf.randn(3, 5, requires_grad=True)
    idx = np.array([[2, 0], [1, 3], [0, 1]])
    out = sf.scatter(a, 1, sf.tensor(idx), src)
    exp = a.detach().numpy().copy()
    for i in range(3):
        for j in range(2):
            exp[i, idx[i, j]] = src.detach().numpy()[i, j]
    np.testing.assert_array_equal(out.detach().numpy(), exp)
    out.sum().backward()
    ga = np.ones((3, 4), np.float32)
    gs = np.zeros((3, 5), np.float32)
    for i in range(3):
        for j in range(2):
            ga[i, idx[i, j]] = 0
            gs[i, j] = 1
    np.testing.assert_array_equal(a.grad.numpy(), ga)
    np.testing.assert_array_equal(src.grad.numpy(), gs)


def test_masked_fill_inplace_no_grad_and_views():
    x = sf.zeros(2, 3)
    v = x[1]
    x.masked_fill_(sf.tensor([True, False, True]), float("-inf"))
    assert np.isneginf(v.numpy()[[0, 2]]).all() and v.numpy()[1] == 0
    assert x._version == 1


def test_embedding_max_norm_renormalises_rows_like_torch():
    w = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32) * 3
    ids = np.array([[0, 2, 2]])
    ws, wt = sf.tensor(w), torch.tensor(w)
    out_s = sf.embedding(sf.tensor(ids), ws, max_norm=1.0)
    out_t = torch.nn.functional.embedding(torch.tensor(ids), wt, max_norm=1.0)
    np.testing.assert_allclose(out_s.numpy(), out_t.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ws.numpy(), wt.numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_grad_large_vocab_matches_dense():
    rng = np.random.default_rng(0)
    V, D = 1000, 8
    ids = rng.integers(0, V, (16, 32))
    w = sf.tensor(rng.standard_normal((V, D)).astype(np.float32), requires_grad=True)
    out = sf.embedding(sf.tensor(ids), w)
    g = rng.standard_normal(out.shape).astype(np.float32)
    (out * sf.tensor(g)).sum().backward()
    dense = np.eye(V, dtype=np.float64)[ids.reshape(-1)].T @ g.reshape(-1, D)
    np.testing.assert_allclose(w.grad.numpy(), dense, rtol=1e-4, atol=1e-4)


def test_where_one_arg_is_nonzero_tuple():
    a = np.array([[0, 1, 0], [2, 0, 3]])
    s = sf.where(sf.tensor(a))
    t = torch.where(torch.tensor(a))
    assert len(s) == len(t)
    for x, y in zip(s, t):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


_INDEX_PUT_CASES = {
    # (target dtype, index, value dtype, value shape): torch refuses every advanced write of
    # another dtype except a one-element value under a single boolean mask (masked_fill_)
    "slice_then_long": ("bfloat16", lambda L: (slice(None), L.tensor([0, 1])), "float32", (2, 2, 4)),
    "long_0d_value": ("float32", lambda L: L.tensor([1]), "float64", ()),
    "long_int_value": ("float32", lambda L: L.tensor([0, 1]), "int64", (2, 3, 4)),
    "list_index": ("float32", lambda L: [0, 1], "float64", (2, 3, 4)),
    "mask_many_values": ("float32", lambda L: L.arange(24).reshape(2, 3, 4) > 20, "float64", (3,)),
    "mask_no_values": ("float32", lambda L: L.zeros(2, 3, 4, dtype=L.bool), "float64", (0,)),
    "mask_one_value": ("float32", lambda L: L.arange(24).reshape(2, 3, 4) > 20, "float64", (1,)),
    "mask_0d_value": ("bfloat16", lambda L: L.arange(24).reshape(2, 3, 4) > 20, "float32", ()),
    "mask_in_dim1": ("float32", lambda L: (slice(None), L.tensor([True, False, True])), "float64", ()),
    "basic_slice": ("bfloat16", lambda L: (slice(None), slice(0, 2)), "float32", (2, 2, 4)),
    "zero_dim_long": ("float32", lambda L: L.tensor(1), "float64", (3, 4)),
}


@pytest.mark.parametrize("name", sorted(_INDEX_PUT_CASES))
def test_setitem_of_another_dtype_as_torch(name):
    """``x[index] = value`` with a value tensor of another dtype: torch's ``index_put_``
    raises "Index put requires the source and destination dtypes match" for an advanced
    index (shardflow cast silently: gpt-fast's float32 keys into a bfloat16 KV cache by
    ``k_out[:, :, input_pos] = k_val``), except a one-element value under one boolean mask
    (torch's masked_fill_); a basic index casts. Same outcome, message and values."""
    import torch

    dtype, index, vdtype, vshape = _INDEX_PUT_CASES[name]
    outcomes = []
    for L in (torch, sf):
        x = L.zeros(2, 3, 4, dtype=getattr(L, dtype))
        value = L.full(vshape, 1.5, dtype=getattr(L, vdtype))
        try:
            x[index(L)] = value
            outcomes.append(x.float().numpy())
        except RuntimeError as e:
            outcomes.append(str(e))
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[0]
        assert outcomes[0].startswith("Index put requires the source and destination dtypes match")
    else:
        np.testing.assert_array_equal(outcomes[1], outcomes[0])


def test_index_put_of_another_dtype_as_torch():
    import torch

    for L in (torch, sf):
        for op in ("index_put", "index_put_"):
            with pytest.raises(RuntimeError, match="got Float for the destination and Double for the source"):
                getattr(L.zeros(5), op)((L.tensor([1]),), L.ones(1, dtype=L.float64))
