"""Convolution and pooling specs (shardflow/ops/conv.py, shardflow/ops/pool.py).

Max-pool inputs use ``distinct=True`` so that no window has a tie (PyTorch and shardflow
then agree on which element gets the gradient, and finite differences are well defined).
"""

from shardflow.testing.opspec import Arg, OpSpec


def _F(m):
    return m.nn.functional if m.__name__ == "torch" else m


def _first(out):
    return out[0] if isinstance(out, tuple) else out


SPECS = [
    # ---------------------------------------------------------------- conv
    OpSpec("conv2d_basic", lambda m, x, w, b: _F(m).conv2d(x, w, b),
           [Arg((2, 3, 6, 5)), Arg((4, 3, 3, 3)), Arg((4,))]),
    OpSpec("conv2d_pad1", lambda m, x, w, b: _F(m).conv2d(x, w, b, padding=1),
           [Arg((2, 3, 6, 6)), Arg((4, 3, 3, 3)), Arg((4,))]),
    OpSpec("conv2d_nobias_stride_pad",
           lambda m, x, w: _F(m).conv2d(x, w, stride=(2, 1), padding=(1, 2)),
           [Arg((2, 2, 7, 6)), Arg((3, 2, 3, 2))]),
    OpSpec("conv2d_dilation_groups",
           lambda m, x, w, b: _F(m).conv2d(x, w, b, stride=2, padding=2, dilation=(2, 1), groups=2),
           [Arg((2, 4, 7, 7)), Arg((6, 2, 3, 3)), Arg((6,))]),
    OpSpec("conv2d_depthwise", lambda m, x, w: _F(m).conv2d(x, w, padding=1, groups=3),
           [Arg((1, 3, 5, 5)), Arg((3, 1, 3, 3))]),
    OpSpec("conv2d_same", lambda m, x, w: _F(m).conv2d(x, w, padding="same"),
           [Arg((2, 2, 5, 6)), Arg((3, 2, 3, 3))]),
    OpSpec("conv2d_same_even_kernel_dilated",
           lambda m, x, w: _F(m).conv2d(x, w, padding="same", dilation=(1, 2)),
           [Arg((1, 2, 5, 6)), Arg((2, 2, 4, 2))]),
    OpSpec("conv2d_valid", lambda m, x, w: _F(m).conv2d(x, w, padding="valid"),
           [Arg((1, 2, 5, 4)), Arg((2, 2, 2, 3))]),
    OpSpec("conv2d_unbatched", lambda m, x, w, b: _F(m).conv2d(x, w, b, padding=1),
           [Arg((2, 4, 4)), Arg((3, 2, 3, 3)), Arg((3,))]),
    # stride 1, 2-D: the one-GEMM lowering's kernels (transpose + bias, wide gradient,
    # col2im) over several planes, with groups, asymmetric padding and dilation
    OpSpec("conv2d_stride1_groups_pad",
           lambda m, x, w, b: _F(m).conv2d(x, w, b, padding=(1, 2), groups=2),
           [Arg((3, 4, 6, 5)), Arg((6, 2, 3, 3)), Arg((6,))]),
    OpSpec("conv2d_stride1_dilated", lambda m, x, w, b: _F(m).conv2d(x, w, b, padding=2, dilation=2),
           [Arg((2, 3, 7, 8)), Arg((4, 3, 3, 3)), Arg((4,))]),
    OpSpec("conv1d_basic", lambda m, x, w, b: _F(m).conv1d(x, w, b),
           [Arg((2, 3, 8)), Arg((4, 3, 3)), Arg((4,))]),
    OpSpec("conv1d_stride_pad_dil_groups",
           lambda m, x, w, b: _F(m).conv1d(x, w, b, stride=2, padding=2, dilation=2, groups=2),
           [Arg((2, 4, 9)), Arg((4, 2, 3)), Arg((4,))]),
    OpSpec("conv1d_same", lambda m, x, w: _F(m).conv1d(x, w, padding="same"),
           [Arg((2, 2, 7)), Arg((3, 2, 4))]),
    OpSpec("conv3d_basic", lambda m, x, w, b: _F(m).conv3d(x, w, b, stride=(1, 2, 1), padding=1),
           [Arg((1, 2, 4, 5, 4)), Arg((3, 2, 3, 3, 2)), Arg((3,))]),
    OpSpec("conv_transpose3d_stride_pad",
           lambda m, x, w, b: _F(m).conv_transpose3d(x, w, b, stride=2, padding=1),
           [Arg((1, 2, 2, 3, 2)), Arg((2, 2, 2, 2, 3)), Arg((2,))]),
    OpSpec("conv_transpose2d_basic", lambda m, x, w, b: _F(m).conv_transpose2d(x, w, b),
           [Arg((2, 3, 4, 5)), Arg((3, 2, 3, 3)), Arg((2,))]),
    OpSpec("conv_transpose2d_stride_pad_outpad",
           lambda m, x, w, b: _F(m).conv_transpose2d(x, w, b, stride=2, padding=1,
                                                     output_padding=1),
           [Arg((2, 2, 3, 4)), Arg((2, 3, 3, 3)), Arg((3,))]),
    OpSpec("conv_transpose2d_groups_dilation",
           lambda m, x, w: _F(m).conv_transpose2d(x, w, stride=(2, 3), padding=(0, 1),
                                                  output_padding=(1, 0), groups=2,
                                                  dilation=(1, 2)),
           [Arg((1, 4, 3, 3)), Arg((4, 1, 2, 3))]),
    OpSpec("conv_transpose1d_basic",
           lambda m, x, w, b: _F(m).conv_transpose1d(x, w, b, stride=2, padding=1),
           [Arg((2, 3, 5)), Arg((3, 2, 3)), Arg((2,))]),
    # ---------------------------------------------------------------- max pool
    OpSpec("max_pool2d_k2", lambda m, x: _F(m).max_pool2d(x, 2),
           [Arg((2, 3, 6, 6), distinct=True)]),
    # disjoint windows that do not tile the input: odd sizes leave rows uncovered, a stride
    # above the kernel leaves gaps, padding shifts the windows (backward's zero-fill path)
    OpSpec("max_pool2d_k2_odd", lambda m, x: _F(m).max_pool2d(x, 2),
           [Arg((2, 3, 7, 5), distinct=True)]),
    # 2x2 / stride 2 (the one-pass kernels): ceil_mode on even sizes keeps whole windows;
    # on odd sizes it adds partial windows (NumPy path)
    OpSpec("max_pool2d_k2_s2_ceil_even", lambda m, x: _F(m).max_pool2d(x, 2, stride=2, ceil_mode=True),
           [Arg((2, 3, 8, 6), distinct=True)]),
    OpSpec("max_pool2d_k2_ceil_odd", lambda m, x: _F(m).max_pool2d(x, 2, ceil_mode=True),
           [Arg((1, 2, 7, 5), distinct=True)]),
    OpSpec("max_pool2d_k2_s3_gaps", lambda m, x: _F(m).max_pool2d(x, 2, stride=3),
           [Arg((1, 2, 8, 8), distinct=True)]),
    OpSpec("max_pool2d_k2_p1", lambda m, x: _F(m).max_pool2d(x, 2, padding=1),
           [Arg((1, 2, 6, 5), distinct=True)]),
    OpSpec("max_pool2d_k3_s2_p1", lambda m, x: _F(m).max_pool2d(x, 3, stride=2, padding=1),
           [Arg((2, 2, 7, 6), distinct=True)]),
    OpSpec("max_pool2d_ceil_dilation",
           lambda m, x: _F(m).max_pool2d(x, (3, 2), stride=(2, 1), padding=1, dilation=(2, 1),
                                         ceil_mode=True),
           [Arg((1, 2, 9, 7), distinct=True)]),
    OpSpec("max_pool2d_return_indices",
           lambda m, x: _F(m).max_pool2d(x, 3, stride=2, ceil_mode=True, return_indices=True),
           [Arg((2, 2, 8, 7), distinct=True)]),
    OpSpec("max_pool2d_unbatched", lambda m, x: _F(m).max_pool2d(x, 2, stride=1),
           [Arg((2, 4, 5), distinct=True)]),
    OpSpec("max_pool1d", lambda m, x: _F(m).max_pool1d(x, 3, stride=2, padding=1,
                                                        return_indices=True),
           [Arg((2, 3, 9), distinct=True)]),
    OpSpec("max_pool3d", lambda m, x: _F(m).max_pool3d(x, 2, stride=(1, 2, 2), ceil_mode=True),
           [Arg((1, 2, 3, 5, 4), distinct=True)]),
    # ---------------------------------------------------------------- avg pool
    OpSpec("avg_pool2d_k2", lambda m, x: _F(m).avg_pool2d(x, 2), [Arg((2, 3, 6, 6))]),
    OpSpec("avg_pool2d_pad_ceil",
           lambda m, x: _F(m).avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
           [Arg((2, 2, 8, 7))]),
    OpSpec("avg_pool2d_no_count_pad",
           lambda m, x: _F(m).avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False),
           [Arg((2, 2, 8, 7))]),
    OpSpec("avg_pool2d_divisor_override",
           lambda m, x: _F(m).avg_pool2d(x, (2, 3), stride=(1, 2), padding=(1, 1),
                                         divisor_override=4),
           [Arg((1, 2, 5, 6))]),
    OpSpec("avg_pool1d", lambda m, x: _F(m).avg_pool1d(x, 4, stride=3, padding=2, ceil_mode=True,
                                                        count_include_pad=False),
           [Arg((2, 3, 10))]),
    OpSpec("avg_pool3d", lambda m, x: _F(m).avg_pool3d(x, 2, stride=(1, 2, 2), padding=1),
           [Arg((1, 2, 3, 4, 5))]),
    # ---------------------------------------------------------------- adaptive
    OpSpec("adaptive_avg_pool2d_uneven", lambda m, x: _F(m).adaptive_avg_pool2d(x, (4, 3)),
           [Arg((2, 3, 9, 7))]),
    OpSpec("adaptive_avg_pool2d_global", lambda m, x: _F(m).adaptive_avg_pool2d(x, 1),
           [Arg((2, 3, 5, 4))]),
    OpSpec("adaptive_avg_pool2d_none", lambda m, x: _F(m).adaptive_avg_pool2d(x, (None, 2)),
           [Arg((3, 5, 7))]),
    OpSpec("adaptive_avg_pool1d", lambda m, x: _F(m).adaptive_avg_pool1d(x, 4),
           [Arg((2, 3, 10))]),
    OpSpec("adaptive_avg_pool3d", lambda m, x: _F(m).adaptive_avg_pool3d(x, (2, 3, 2)),
           [Arg((1, 2, 5, 4, 3))]),
    OpSpec("adaptive_max_pool2d",
           lambda m, x: _F(m).adaptive_max_pool2d(x, (3, 2), return_indices=True),
           [Arg((2, 2, 7, 5), distinct=True)]),
    OpSpec("adaptive_max_pool1d", lambda m, x: _F(m).adaptive_max_pool1d(x, 3),
           [Arg((2, 3, 8), distinct=True)]),
    OpSpec("adaptive_max_pool3d", lambda m, x: _F(m).adaptive_max_pool3d(x, 2),
           [Arg((1, 2, 3, 4, 5), distinct=True)]),
]
