"""Op specs for shape ops (shardflow/ops/shape.py): forward + backward vs PyTorch and float64
finite differences."""

from shardflow.testing.opspec import Arg, OpSpec


def F(m):
    """``torch.nn.functional`` for torch; the functional ops live at top level in shardflow."""
    return m.nn.functional if m.__name__ == "torch" else m


SPECS = [
    # reshape / view
    OpSpec("reshape_infer", lambda m, a: m.reshape(a, (4, -1)), [Arg((2, 3, 4))]),
    OpSpec("reshape_method_varargs", lambda m, a: a.reshape(3, 2, 4), [Arg((2, 3, 4))]),
    OpSpec("reshape_noncontig_copy", lambda m, a: a.transpose(0, 1).reshape(-1), [Arg((2, 3))]),
    OpSpec("reshape_to_0d", lambda m, a: a.reshape(()), [Arg((1, 1))]),
    OpSpec("view_method", lambda m, a: a.view(3, -1), [Arg((2, 3, 2))]),
    OpSpec("view_tuple", lambda m, a: a.view((2, 6)) * 2, [Arg((3, 4))]),
    OpSpec("view_as", lambda m, a, b: a.view_as(b), [Arg((3, 4)), Arg((2, 6), grad=False)]),
    OpSpec("view_dtype_int32", lambda m, a: a.view(m.int32), [Arg((2, 3))], grad=False, fd=False,
           dtypes=("float32",), notes="a float32 bit pattern: other dtypes have other itemsizes"),
    OpSpec("ravel", lambda m, a: m.ravel(a.t()), [Arg((2, 3))]),
    OpSpec("flatten_all", lambda m, a: m.flatten(a), [Arg((2, 3, 4))]),
    OpSpec("flatten_start", lambda m, a: a.flatten(1), [Arg((2, 3, 4))]),
    OpSpec("flatten_range", lambda m, a: m.flatten(a, 0, -2), [Arg((2, 3, 4))]),
    OpSpec("flatten_0d", lambda m, a: a.flatten(), [Arg(())]),
    OpSpec("unflatten", lambda m, a: m.unflatten(a, 1, (2, -1)), [Arg((2, 6, 3))]),
    OpSpec("unflatten_method", lambda m, a: a.unflatten(-1, (3, 2)), [Arg((2, 6))]),
    OpSpec("squeeze_all", lambda m, a: m.squeeze(a), [Arg((1, 3, 1, 2))]),
    OpSpec("squeeze_dim", lambda m, a: a.squeeze(2), [Arg((1, 3, 1, 2))]),
    OpSpec("squeeze_dim_not1", lambda m, a: a.squeeze(1), [Arg((1, 3, 1, 2))]),
    OpSpec("squeeze_tuple", lambda m, a: m.squeeze(a, (0, -2)), [Arg((1, 3, 1, 2))]),
    OpSpec("unsqueeze_0", lambda m, a: m.unsqueeze(a, 0), [Arg((3, 2))]),
    OpSpec("unsqueeze_neg", lambda m, a: a.unsqueeze(-1), [Arg((3, 2))]),
    # permute family
    OpSpec("permute_varargs", lambda m, a: a.permute(2, 0, 1), [Arg((2, 3, 4))]),
    OpSpec("permute_functional", lambda m, a: m.permute(a, (1, -1, 0)), [Arg((2, 3, 4))]),
    OpSpec("transpose", lambda m, a: m.transpose(a, 0, -1), [Arg((2, 3, 4))]),
    OpSpec("swapaxes", lambda m, a: m.swapaxes(a, 1, 2), [Arg((2, 3, 4))]),
    OpSpec("swapdims_method", lambda m, a: a.swapdims(0, 1), [Arg((2, 3))]),
    OpSpec("t_2d", lambda m, a: m.t(a), [Arg((2, 3))]),
    OpSpec("t_1d", lambda m, a: a.t(), [Arg((3,))]),
    OpSpec("T_property", lambda m, a: a.T * 1, [Arg((2, 3))]),
    OpSpec("mT_property", lambda m, a: a.mT * 1, [Arg((2, 3, 4))]),
    OpSpec("movedim", lambda m, a: m.movedim(a, 0, -1), [Arg((2, 3, 4))]),
    OpSpec("movedim_multi", lambda m, a: m.movedim(a, (0, 1), (2, 0)), [Arg((2, 3, 4))]),
    OpSpec("moveaxis_method", lambda m, a: a.moveaxis(-1, 0), [Arg((2, 3, 4))]),
    # expand / repeat / tile
    OpSpec("expand", lambda m, a: a.expand(2, -1, 4), [Arg((1, 3, 1))]),
    OpSpec("expand_new_dims", lambda m, a: a.expand(5, 3, 4), [Arg((3, 1))]),
    OpSpec("expand_tuple", lambda m, a: a.expand((2, 3)), [Arg((3,))]),
    OpSpec("expand_as", lambda m, a, b: a.expand_as(b), [Arg((3, 1)), Arg((2, 3, 4), grad=False)]),
    OpSpec("broadcast_to", lambda m, a: m.broadcast_to(a, (2, 3, 4)), [Arg((3, 1))]),
    OpSpec("broadcast_tensors", lambda m, a, b: tuple(m.broadcast_tensors(a, b)), [Arg((3, 1)), Arg((1, 4))]),
    OpSpec("repeat", lambda m, a: a.repeat(2, 1, 3), [Arg((3, 2))]),
    OpSpec("repeat_tuple", lambda m, a: a.repeat((2, 2)), [Arg((3, 2))]),
    OpSpec("tile_short", lambda m, a: m.tile(a, (2,)), [Arg((3, 2))]),
    OpSpec("tile_long", lambda m, a: a.tile(2, 1, 2), [Arg((3, 2))]),
    # cat / stack
    OpSpec("cat_dim0", lambda m, a, b: m.cat([a, b]), [Arg((2, 3)), Arg((4, 3))]),
    OpSpec("cat_dim1_three", lambda m, a, b, c: m.cat((a, b, c), dim=1), [Arg((2, 1)), Arg((2, 3)), Arg((2, 2))]),
    OpSpec("cat_neg_dim", lambda m, a, b: m.cat([a, b], -1), [Arg((2, 3, 1)), Arg((2, 3, 2))]),
    OpSpec("cat_promote_f64", lambda m, a, b: m.cat([a, b]), [Arg((2, 3)), Arg((1, 3), dtype="float64")], fd=False),
    OpSpec("cat_promote_int_float", lambda m, a, b: m.cat([a, b]), [Arg((2, 3)), Arg((1, 3), kind="int", low=-3, high=3)]),
    OpSpec("cat_skip_legacy_empty", lambda m, a, b: m.cat([a, b]), [Arg((2, 3)), Arg((0,))]),
    OpSpec("concat_alias", lambda m, a, b: m.concat([a, b], dim=1), [Arg((2, 3)), Arg((2, 1))]),
    OpSpec("stack_dim0", lambda m, a, b: m.stack([a, b]), [Arg((2, 3)), Arg((2, 3))]),
    OpSpec("stack_neg_dim", lambda m, a, b, c: m.stack((a, b, c), dim=-1), [Arg((2, 3)), Arg((2, 3)), Arg((2, 3))]),
    OpSpec("hstack", lambda m, a, b: m.hstack([a, b]), [Arg((2, 3)), Arg((2, 1))]),
    OpSpec("vstack_1d", lambda m, a, b: m.vstack([a, b]), [Arg((3,)), Arg((3,))]),
    # split family
    OpSpec("split_int", lambda m, a: m.split(a, 2, dim=1), [Arg((2, 5))]),
    OpSpec("split_sizes", lambda m, a: a.split([1, 3, 1]), [Arg((5, 2))]),
    OpSpec("split_partial_use", lambda m, a: a.split(2)[1] * 3, [Arg((5, 2))]),
    OpSpec("chunk_even", lambda m, a: m.chunk(a, 3, 0), [Arg((6, 2))]),
    OpSpec("chunk_uneven", lambda m, a: a.chunk(4, dim=1), [Arg((2, 6))]),
    OpSpec("chunk_more_than_size", lambda m, a: m.chunk(a, 10), [Arg((5,))]),
    OpSpec("unbind", lambda m, a: m.unbind(a, 1), [Arg((2, 3, 2))]),
    OpSpec("unbind_method_partial", lambda m, a: a.unbind()[0] * 2, [Arg((3, 2))]),
    OpSpec("narrow", lambda m, a: m.narrow(a, 1, 1, 2), [Arg((3, 4))]),
    OpSpec("narrow_neg_start", lambda m, a: a.narrow(0, -2, 2), [Arg((4, 3))]),
    # pad
    OpSpec("pad_constant_last", lambda m, a: F(m).pad(a, (1, 2)), [Arg((2, 3))]),
    OpSpec("pad_constant_2d_value", lambda m, a: F(m).pad(a, (1, 0, 2, 1), value=-1.5), [Arg((2, 3, 4))]),
    OpSpec("pad_constant_negative_crop", lambda m, a: F(m).pad(a, (-1, 2, 1, -1)), [Arg((3, 4))]),
    OpSpec("pad_reflect_1d", lambda m, a: F(m).pad(a, (2, 1), mode="reflect"), [Arg((2, 3, 4))]),
    OpSpec("pad_reflect_2d", lambda m, a: F(m).pad(a, (1, 1, 2, 0), mode="reflect"), [Arg((1, 2, 3, 4))]),
    OpSpec("pad_replicate_2d", lambda m, a: F(m).pad(a, (2, 1, 0, 3), mode="replicate"), [Arg((1, 2, 3, 4))]),
    OpSpec("pad_replicate_3d", lambda m, a: F(m).pad(a, (1, 0, 0, 1, 1, 1), mode="replicate"), [Arg((1, 1, 2, 3, 2))]),
    OpSpec("pad_circular_1d", lambda m, a: F(m).pad(a, (3, 1), mode="circular"), [Arg((1, 2, 4))]),
    OpSpec("pad_circular_2d", lambda m, a: F(m).pad(a, (1, 2, 2, 1), mode="circular"), [Arg((1, 2, 3, 4))]),
    # flip / roll / tril / triu
    OpSpec("flip", lambda m, a: m.flip(a, (0, 2)), [Arg((2, 3, 4))]),
    OpSpec("flip_method_varargs", lambda m, a: a.flip(-1), [Arg((2, 3))]),
    OpSpec("fliplr", lambda m, a: m.fliplr(a), [Arg((2, 3))]),
    OpSpec("roll_flat", lambda m, a: m.roll(a, 2), [Arg((2, 3))]),
    OpSpec("roll_dim", lambda m, a: a.roll(-1, 1), [Arg((2, 3))]),
    OpSpec("roll_multi", lambda m, a: m.roll(a, (1, 2), (0, 2)), [Arg((2, 3, 4))]),
    OpSpec("tril", lambda m, a: m.tril(a), [Arg((4, 3))]),
    OpSpec("tril_diag_batched", lambda m, a: a.tril(-1), [Arg((2, 3, 4))]),
    OpSpec("triu_diag", lambda m, a: m.triu(a, 1), [Arg((3, 4))]),
    # select / tensor_split / diagonal / unfold / meshgrid
    OpSpec("select", lambda m, a: m.select(a, 1, -1), [Arg((2, 3, 4))]),
    OpSpec("select_method", lambda m, a: a.select(0, 1), [Arg((2, 3))]),
    OpSpec("split_with_sizes", lambda m, a: a.split_with_sizes([2, 1], 1), [Arg((2, 3))]),
    OpSpec("tensor_split_sections", lambda m, a: m.tensor_split(a, 3), [Arg((7, 2))]),
    OpSpec("tensor_split_indices", lambda m, a: m.tensor_split(a, [1, 5, 9], dim=1), [Arg((2, 7))]),
    OpSpec("tensor_split_unsorted", lambda m, a: m.tensor_split(a, [4, 2]), [Arg((6,))]),
    OpSpec("diagonal", lambda m, a: m.diagonal(a), [Arg((3, 4))]),
    OpSpec("diagonal_offset_dims", lambda m, a: m.diagonal(a, 1, 2, 0), [Arg((3, 2, 4))]),
    OpSpec("diagonal_neg_offset", lambda m, a: a.diagonal(-1), [Arg((4, 3))]),
    OpSpec("unfold_windows", lambda m, a: a.unfold(1, 3, 2), [Arg((2, 8))]),
    OpSpec("unfold_overlap", lambda m, a: a.unfold(0, 3, 1), [Arg((5, 2))]),
    OpSpec("meshgrid_ij", lambda m, a, b: m.meshgrid(a, b, indexing="ij"), [Arg((3,)), Arg((4,))]),
    OpSpec("meshgrid_xy", lambda m, a, b, c: m.meshgrid(a, b, c, indexing="xy"), [Arg((3,)), Arg((2,)), Arg((2,))]),
    # shardflow.expand_as is also a function (Tensor.expand_as calls expand directly); torch
    # has only the method
    OpSpec("expand_as_function", lambda m, a, b: m.expand_as(a, b) if m.__name__ == "shardflow" else a.expand_as(b),
           [Arg((3, 1)), Arg((2, 3, 4), grad=False)]),
    OpSpec("flipud", lambda m, a: m.flipud(a), [Arg((3, 2, 2))]),
    # integer data goes through unchanged
    OpSpec("permute_int", lambda m, a: a.permute(1, 0).reshape(-1), [Arg((2, 3), kind="int", low=-5, high=5)], grad=False, fd=False),
]
