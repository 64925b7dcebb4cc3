"""Op specs for indexing ops (shardflow/ops/index.py): forward + backward vs PyTorch and
float64 finite differences. Index inputs are ``Arg(kind="index", grad=False)``."""

from shardflow.testing.opspec import Arg, OpSpec


def F(m):
    """``torch.nn.functional`` for torch; the functional ops live at top level in shardflow."""
    return m.nn.functional if m.__name__ == "torch" else m


def _set(a, idx, v):
    """Out-of-place wrapper around ``y[idx] = v`` (grad reaches both ``a`` and ``v``)."""
    y = a * 1
    y[idx] = v
    return y


def _inplace(a, method, *args, **kw):
    y = a * 1
    getattr(y, method)(*args, **kw)
    return y


I = dict(kind="index", grad=False)

SPECS = [
    # getitem: basic
    OpSpec("getitem_int", lambda m, a: a[1], [Arg((3, 4))]),
    OpSpec("getitem_neg_int_0d", lambda m, a: a[-1, 2], [Arg((3, 4))]),
    OpSpec("getitem_slice_step", lambda m, a: a[1:, ::2], [Arg((3, 5))]),
    OpSpec("getitem_none_ellipsis", lambda m, a: a[None, ..., 1], [Arg((2, 3, 4))]),
    OpSpec("getitem_ellipsis_middle", lambda m, a: a[0, ..., 1:3], [Arg((2, 3, 4))]),
    OpSpec("getitem_chain", lambda m, a: a[1:][0][::2], [Arg((3, 5))]),
    # getitem: advanced
    OpSpec("getitem_list_dup", lambda m, a: a[[0, 2, 0]], [Arg((3, 4))]),
    OpSpec("getitem_tensor_index", lambda m, a, i: a[i], [Arg((5, 3)), Arg((2, 4), high=5, **I)]),
    OpSpec("getitem_two_tensors", lambda m, a, i, j: a[i, j], [Arg((4, 5)), Arg((6,), high=4, **I), Arg((6,), high=5, **I)]),
    OpSpec("getitem_adv_separated", lambda m, a, i: a[i, :, i], [Arg((3, 2, 3)), Arg((4,), high=3, **I)]),
    OpSpec("getitem_slice_then_list", lambda m, a: a[1:, [0, 2, 2]], [Arg((3, 4))]),
    OpSpec("getitem_adv_middle", lambda m, a, i: a[:, i], [Arg((2, 4, 3)), Arg((2, 2), high=4, **I)]),
    OpSpec("getitem_mask_full", lambda m, a, k: a[k], [Arg((3, 4)), Arg((3, 4), kind="bool")]),
    OpSpec("getitem_mask_rows", lambda m, a, k: a[k], [Arg((5, 2)), Arg((5,), kind="bool")]),
    OpSpec("getitem_mask_dim1", lambda m, a, k: a[:, k], [Arg((2, 5)), Arg((5,), kind="bool")]),
    OpSpec("getitem_mask_and_int_array", lambda m, a: a[m.tensor([True, False, True]), [1, 1]], [Arg((3, 2))]),
    OpSpec("getitem_int_tensor_data", lambda m, a: a[1:, [0, 1]], [Arg((3, 4), kind="int", low=-5, high=5)], grad=False, fd=False),
    # setitem
    OpSpec("setitem_slice_tensor_bcast", lambda m, a, v: _set(a, (slice(1, 3),), v), [Arg((4, 3)), Arg((3,))]),
    OpSpec("setitem_scalar", lambda m, a: _set(a, (0, slice(None)), 2.5), [Arg((3, 4))]),
    OpSpec("setitem_adv_tensor", lambda m, a, v: _set(a, ([0, 2], slice(1, 3)), v), [Arg((3, 4)), Arg((2, 2))]),
    OpSpec("setitem_mask_scalar", lambda m, a, k: _set(a, k, 0.0), [Arg((3, 4)), Arg((3, 4), kind="bool")]),
    OpSpec("setitem_mask_value_tensor", lambda m, a, k, v: _set(a, k, v), [Arg((4, 3)), Arg((4,), kind="bool"), Arg((3,))]),
    OpSpec("setitem_leading_one_dims", lambda m, a, v: _set(a, 1, v), [Arg((3, 4)), Arg((1, 4))]),
    OpSpec("setitem_into_zeros", lambda m, v: _set(m.zeros(3, 4, dtype=v.dtype), (slice(None), 1), v), [Arg((3,))]),
    OpSpec("setitem_int_tensor", lambda m, a: _set(a, [0, 2], 7), [Arg((3, 2), kind="int", low=0, high=5)], grad=False, fd=False),
    # gather / scatter
    OpSpec("gather_dim1", lambda m, a, i: m.gather(a, 1, i), [Arg((3, 4)), Arg((3, 5), high=4, **I)]),
    OpSpec("gather_dim0_smaller", lambda m, a, i: a.gather(0, i), [Arg((4, 3, 2)), Arg((5, 2, 2), high=4, **I)]),
    OpSpec("gather_neg_dim", lambda m, a, i: m.gather(a, -1, i), [Arg((2, 3)), Arg((2, 1), high=3, **I)]),
    OpSpec("scatter_src", lambda m, a, s: m.scatter(a, 1, m.tensor([[2, 0], [1, 3], [0, 1]]), s), [Arg((3, 4)), Arg((3, 2))]),
    OpSpec("scatter_value", lambda m, a: a.scatter(0, m.tensor([[1, 0, 2]]), 1.5), [Arg((3, 3))]),
    OpSpec("scatter_value_kw", lambda m, a: m.scatter(a, 1, m.tensor([[1], [0]]), value=-2.0), [Arg((2, 3))]),
    OpSpec("scatter_inplace", lambda m, a, s: _inplace(a, "scatter_", 0, m.tensor([[1, 0], [0, 1]]), s), [Arg((2, 2)), Arg((2, 2))]),
    OpSpec("scatter_add", lambda m, a, i, s: m.scatter_add(a, 1, i, s), [Arg((3, 4)), Arg((3, 6), high=4, **I), Arg((3, 6))]),
    OpSpec("scatter_add_method", lambda m, a, i, s: a.scatter_add(0, i, s), [Arg((3, 2)), Arg((4, 2), high=3, **I), Arg((4, 2))]),
    OpSpec("scatter_add_inplace", lambda m, a, i, s: _inplace(a, "scatter_add_", 1, i, s), [Arg((2, 3)), Arg((2, 4), high=3, **I), Arg((2, 4))]),
    # index_select / index_add
    OpSpec("index_select_dim0", lambda m, a, i: m.index_select(a, 0, i), [Arg((4, 3)), Arg((6,), high=4, **I)]),
    OpSpec("index_select_dim1", lambda m, a, i: a.index_select(1, i), [Arg((2, 5, 2)), Arg((3,), high=5, **I)]),
    OpSpec("index_add", lambda m, a, i, s: m.index_add(a, 0, i, s), [Arg((4, 3)), Arg((5,), high=4, **I), Arg((5, 3))]),
    OpSpec("index_add_alpha_dim1", lambda m, a, i, s: a.index_add(1, i, s, alpha=-2.0), [Arg((2, 4)), Arg((3,), high=4, **I), Arg((2, 3))]),
    OpSpec("index_add_inplace", lambda m, a, i, s: _inplace(a, "index_add_", 0, i, s), [Arg((3, 2)), Arg((4,), high=3, **I), Arg((4, 2))]),
    # masked ops
    OpSpec("masked_fill_scalar", lambda m, a, k: m.masked_fill(a, k, -3.0), [Arg((3, 4)), Arg((3, 4), kind="bool")]),
    OpSpec("masked_fill_bcast_mask", lambda m, a, k: a.masked_fill(k, 0.0), [Arg((2, 3, 4)), Arg((3, 1), kind="bool")]),
    OpSpec("masked_fill_bcast_input", lambda m, a, k: m.masked_fill(a, k, 1.0), [Arg((4,)), Arg((2, 4), kind="bool")]),
    OpSpec("masked_fill_tensor_value", lambda m, a, k, v: m.masked_fill(a, k, v), [Arg((3, 4)), Arg((3, 4), kind="bool"), Arg(())]),
    OpSpec("masked_fill_inplace", lambda m, a, k: _inplace(a, "masked_fill_", k, 5.0), [Arg((3, 4)), Arg((4,), kind="bool")]),
    OpSpec("masked_fill_neg_inf_softmax", lambda m, a, k: (a.masked_fill(k, float("-inf")).exp() * 1), [Arg((2, 3)), Arg((2, 3), kind="bool")]),
    OpSpec("masked_select", lambda m, a, k: m.masked_select(a, k), [Arg((3, 4)), Arg((3, 4), kind="bool")]),
    OpSpec("masked_select_bcast", lambda m, a, k: a.masked_select(k), [Arg((3, 1)), Arg((2, 3, 4), kind="bool")]),
    # take / take_along_dim
    OpSpec("take_along_dim", lambda m, a, i: m.take_along_dim(a, i, 1), [Arg((3, 4)), Arg((3, 2), high=4, **I)]),
    OpSpec("take_along_dim_bcast", lambda m, a, i: m.take_along_dim(a, i, dim=0), [Arg((4, 1)), Arg((2, 3), high=4, **I)]),
    OpSpec("take_along_dim_flat", lambda m, a, i: m.take_along_dim(a, i), [Arg((3, 4)), Arg((5,), high=12, **I)]),
    OpSpec("take", lambda m, a, i: m.take(a, i), [Arg((3, 4)), Arg((2, 3), high=12, **I)]),
    # embedding
    OpSpec("embedding", lambda m, i, w: F(m).embedding(i, w), [Arg((2, 5), high=6, **I), Arg((6, 3))]),
    OpSpec("embedding_padding_idx", lambda m, i, w: F(m).embedding(i, w, padding_idx=2), [Arg((3, 4), high=4, **I), Arg((4, 3))], fd=False,
             notes="padding/frequency scaling is not the true gradient (as in PyTorch)"),
    OpSpec("embedding_neg_padding_idx", lambda m, i, w: F(m).embedding(i, w, padding_idx=-1), [Arg((7,), high=4, **I), Arg((4, 2))], fd=False,
             notes="padding/frequency scaling is not the true gradient (as in PyTorch)"),
    OpSpec("embedding_scale_grad_by_freq", lambda m, i, w: F(m).embedding(i, w, scale_grad_by_freq=True), [Arg((3, 4), high=3, **I), Arg((3, 2))], fd=False,
             notes="padding/frequency scaling is not the true gradient (as in PyTorch)"),
    OpSpec("embedding_torch_order", lambda m, i, w: m.embedding(w, i), [Arg((4,), high=5, **I), Arg((5, 2))]),
    # index_put / index_fill / repeat_interleave / one_hot
    OpSpec("index_put", lambda m, a, v: m.index_put(a, (m.tensor([3, 1]),), v), [Arg((4, 3)), Arg((3,))]),
    OpSpec("index_put_accumulate", lambda m, a, i, v: a.index_put((i,), v, accumulate=True), [Arg((4, 3)), Arg((6,), high=4, **I), Arg((6, 3))]),
    OpSpec("index_put_inplace_two", lambda m, a, v: _inplace(a, "index_put_", (m.tensor([0, 2]), m.tensor([1, 1])), v), [Arg((3, 2)), Arg((2,))]),
    OpSpec("index_fill", lambda m, a, i: m.index_fill(a, 1, i, -1.0), [Arg((2, 4)), Arg((3,), high=4, **I)]),
    OpSpec("index_fill_tensor_value", lambda m, a, i, v: a.index_fill(0, i, v), [Arg((3, 2)), Arg((2,), high=3, **I), Arg(())]),
    OpSpec("index_fill_inplace", lambda m, a: _inplace(a, "index_fill_", 0, m.tensor([2, 0]), 3.0), [Arg((3, 2))]),
    OpSpec("repeat_interleave_int", lambda m, a: m.repeat_interleave(a, 2, dim=1), [Arg((2, 3))]),
    OpSpec("repeat_interleave_flat", lambda m, a: a.repeat_interleave(3), [Arg((2, 2))]),
    OpSpec("repeat_interleave_tensor", lambda m, a: m.repeat_interleave(a, m.tensor([1, 0, 2]), dim=0), [Arg((3, 2))]),
    OpSpec("repeat_interleave_indices", lambda m: m.repeat_interleave(m.tensor([2, 0, 1])), [], grad=False, fd=False),
    OpSpec("one_hot", lambda m, i: F(m).one_hot(i, 5), [Arg((2, 3), high=5, **I)], grad=False, fd=False),
    OpSpec("one_hot_infer", lambda m, i: F(m).one_hot(i), [Arg((4,), high=3, **I)], grad=False, fd=False),
    # nonzero
    OpSpec("nonzero", lambda m, a: m.nonzero(a), [Arg((3, 4), kind="int", low=0, high=2)], grad=False, fd=False),
    OpSpec("nonzero_as_tuple", lambda m, a: m.nonzero(a, as_tuple=True), [Arg((3, 4), kind="bool")], grad=False, fd=False),
    OpSpec("nonzero_float_method", lambda m, a: (a > 0).float().nonzero(), [Arg((2, 3, 2))], grad=False, fd=False),
    OpSpec("argwhere", lambda m, a: m.argwhere(a), [Arg((5,), kind="int", low=0, high=2)], grad=False, fd=False),
    # embedding_bag (bags from offsets: 2, 0, 3, 3 entries; or a 2-D input of fixed bags)
    OpSpec("embedding_bag_sum", lambda m, i, w: F(m).embedding_bag(i, w, m.tensor([0, 2, 2, 5]), mode="sum"),
           [Arg((8,), high=6, **I), Arg((6, 3))]),
    OpSpec("embedding_bag_mean_padding", lambda m, i, w: F(m).embedding_bag(i, w, m.tensor([0, 3, 3, 4]), padding_idx=1),
           [Arg((7,), high=4, **I), Arg((4, 3))]),
    OpSpec("embedding_bag_max", lambda m, i, w: F(m).embedding_bag(i, w, m.tensor([0, 2, 2, 5]), mode="max"),
           [Arg((8,), high=6, **I), Arg((6, 3), distinct=True)]),
    OpSpec("embedding_bag_max_2d", lambda m, i, w: m.embedding_bag(i, w, mode="max") if m.__name__ != "torch"
           else m.nn.functional.embedding_bag(i, w, mode="max"), [Arg((3, 4), high=5, **I), Arg((5, 2), distinct=True)]),
    OpSpec("embedding_bag_per_sample_weights",
           lambda m, i, w, p: F(m).embedding_bag(i, w, m.tensor([0, 4, 4]), mode="sum", per_sample_weights=p, padding_idx=0),
           [Arg((6,), high=5, **I), Arg((5, 3)), Arg((6,))]),
    OpSpec("embedding_bag_last_offset", lambda m, i, w: F(m).embedding_bag(i, w, m.tensor([0, 1, 6]), mode="mean",
                                                                           include_last_offset=True),
           [Arg((6,), high=4, **I), Arg((4, 2))]),
    # each index occurs twice: torch 2.13's CPU frequency scaling is right here (pytorch#190063)
    OpSpec("embedding_bag_scale_grad_by_freq",
           lambda m, w: F(m).embedding_bag(m.tensor([3, 0, 3, 2, 0, 2]), w, m.tensor([0, 2]), mode="sum",
                                           scale_grad_by_freq=True), [Arg((4, 2))], fd=False,
           notes="frequency scaling is not the true gradient (as in PyTorch)"),
]
