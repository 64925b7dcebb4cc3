"""Ops of the compat-ops pass: statistics (ops/stats.py), indexed reductions
(ops/index_reduce.py), in-place forms and methods
(ops/tensor_compat.py)."""

import math

from shardflow.testing.opspec import Arg, OpSpec

D = dict(distinct=True)
NAN = math.nan


def _nan_where_large(m, a):
    return m.where(a > 0.4, m.full_like(a, NAN), a)


def _cat_dups(m, a):
    return m.cat([a, a[:, :2]], 1)  # the first two columns appear twice: they are the modes


SPECS = [
    # cov / corrcoef
    OpSpec("cov", lambda m, a: m.cov(a), [Arg((3, 5))]),
    OpSpec("cov_1d_method", lambda m, a: a.cov(), [Arg((6,))]),
    OpSpec("cov_correction0", lambda m, a: m.cov(a, correction=0), [Arg((2, 4))]),
    OpSpec("cov_weights", lambda m, a, w: m.cov(a, fweights=m.tensor([1, 2, 1, 3, 1]), aweights=w),
           [Arg((3, 5)), Arg((5,), kind="positive")]),
    OpSpec("cov_fweights_correction2", lambda m, a: m.cov(a, correction=2, fweights=m.tensor([2, 1, 3, 1])),
           [Arg((2, 4))]),
    OpSpec("corrcoef", lambda m, a: m.corrcoef(a), [Arg((3, 6))]),
    OpSpec("corrcoef_method", lambda m, a: a.corrcoef(), [Arg((2, 5))]),
    # mode / nanmedian
    OpSpec("mode_dim", lambda m, a: tuple(m.mode(_cat_dups(m, a), 1)), [Arg((3, 5), **D)]),
    OpSpec("mode_default_dim_keepdim", lambda m, a: tuple(_cat_dups(m, a).mode(keepdim=True)), [Arg((2, 4), **D)]),
    OpSpec("mode_int", lambda m, a: tuple(m.mode(a, 0)), [Arg((7, 3), kind="int", low=0, high=3)], grad=False,
           fd=False),
    OpSpec("nanmedian_all", lambda m, a: m.nanmedian(_nan_where_large(m, a)), [Arg((3, 5), **D)]),
    OpSpec("nanmedian_dim", lambda m, a: tuple(m.nanmedian(_nan_where_large(m, a), 1)), [Arg((3, 5), **D)]),
    OpSpec("nanmedian_dim0_keepdim", lambda m, a: tuple(_nan_where_large(m, a).nanmedian(0, True)),
           [Arg((4, 3), **D)]),
    OpSpec("nanmedian_no_nan", lambda m, a: tuple(m.nanmedian(a, -1)), [Arg((2, 6), **D)]),
    # renorm
    OpSpec("renorm_p2_dim0", lambda m, a: m.renorm(a, 2, 0, 1.0), [Arg((3, 4))]),
    OpSpec("renorm_p1_dim1_method", lambda m, a: a.renorm(1, 1, 1.5), [Arg((3, 4, 2))]),
    OpSpec("renorm_inplace", lambda m, a: (a * 1).renorm_(3, -1, 0.8), [Arg((4, 3))]),
    # gradient
    OpSpec("gradient_default", lambda m, a: m.gradient(a), [Arg((4, 5))]),
    OpSpec("gradient_spacing_edge2", lambda m, a: m.gradient(a, spacing=0.5, dim=1, edge_order=2), [Arg((3, 5))]),
    OpSpec("gradient_coordinates", lambda m, a: m.gradient(a, spacing=(m.tensor([0.0, 0.5, 1.5, 2.0, 3.5]),), dim=-1),
           [Arg((2, 5))]),
    OpSpec("gradient_coordinates_edge2",
           lambda m, a: m.gradient(a, spacing=(m.tensor([0.0, 1.0, 1.5]), m.tensor([0.0, 0.5, 1.5, 2.0])),
                                   edge_order=2), [Arg((3, 4))]),
    # put / index_reduce / segment_reduce / nonzero_static
    OpSpec("put", lambda m, a, s: m.put(a, m.tensor([-1, 0, 5]), s), [Arg((3, 4)), Arg((3,))]),
    OpSpec("put_accumulate_method", lambda m, a, s: a.put(m.tensor([[1, 1], [6, -2]]), s, accumulate=True),
           [Arg((2, 4)), Arg((2, 2))]),
    OpSpec("put_inplace", lambda m, a, s: (a * 1).put_(m.tensor([2, 0]), s), [Arg((5,)), Arg((2,))]),
    OpSpec("index_reduce_prod", lambda m, a, s: m.index_reduce(a, 1, m.tensor([0, 2, 0]), s, "prod"),
           [Arg((2, 4), kind="nonzero"), Arg((2, 3), kind="nonzero")]),
    OpSpec("index_reduce_mean_no_self", lambda m, a, s: a.index_reduce(0, m.tensor([2, 0, 2]), s, "mean",
                                                                       include_self=False),
           [Arg((3, 2)), Arg((3, 2))]),
    OpSpec("index_reduce_amax", lambda m, a, s: m.index_reduce(a, 0, m.tensor([1, 1, 0]), s, "amax"),
           [Arg((2, 3)), Arg((3, 3))]),
    OpSpec("index_reduce_amin_inplace", lambda m, a, s: (a * 1).index_reduce_(1, m.tensor([1, 1]), s, "amin"),
           [Arg((3, 3)), Arg((3, 2))]),
    OpSpec("segment_reduce_sum", lambda m, a: m.segment_reduce(a, "sum", lengths=m.tensor([2, 0, 3])), [Arg((5,))]),
    OpSpec("segment_reduce_mean_initial", lambda m, a: m.segment_reduce(a, "mean", lengths=m.tensor([2, 1, 2]),
                                                                        initial=0.5), [Arg((5, 2))]),
    OpSpec("segment_reduce_max_offsets", lambda m, a: m.segment_reduce(a, "max", offsets=m.tensor([0, 2, 5])),
           [Arg((5,), **D)]),
    OpSpec("segment_reduce_prod_axis1",
           lambda m, a: m.segment_reduce(a, "prod", lengths=m.tensor([[1, 2], [3, 0]]), axis=1),
           [Arg((2, 3), kind="nonzero")]),
    OpSpec("nonzero_static_pad", lambda m, a: m.nonzero_static(a, size=6, fill_value=-3),
           [Arg((2, 3), kind="int", low=0, high=2)], grad=False, fd=False),
    OpSpec("nonzero_static_cut", lambda m, a: m.nonzero_static(a, size=2), [Arg((7,), kind="int", low=0, high=2)],
           grad=False, fd=False),
    # methods of nn.functional ops
    OpSpec("hardshrink_method", lambda m, a: a.hardshrink(0.6), [Arg((3, 4))]),
    OpSpec("hardshrink_method_default", lambda m, a: a.hardshrink(), [Arg((3, 4))]),
    OpSpec("prelu_method", lambda m, a, w: a.prelu(w), [Arg((2, 3, 4), kind="nonzero"), Arg((3,))]),
    OpSpec("prelu_method_scalar_weight", lambda m, a, w: a.prelu(w), [Arg((5,), kind="nonzero"), Arg((1,))]),
    # in-place forms of existing ops
    # non-negative exponents: torch 2.13's ldexp gradient is 0 for negative integer exponents
    # (it computes 2 ** other in integers); shardflow's is 2 ** other
    OpSpec("ldexp_inplace", lambda m, a: (a * 1).ldexp_(m.tensor([1, 0, 3])), [Arg((2, 3))]),
    OpSpec("heaviside_inplace", lambda m, a, v: (a * 1).heaviside_(v), [Arg((3, 4)), Arg((4,))], grad=False,
           fd=False),
    OpSpec("nextafter_inplace", lambda m, a, b: (a * 1).nextafter_(b), [Arg((3, 4)), Arg((3, 4))], grad=False,
           fd=False, dtypes=("float32", "float64"), notes="torch has no bfloat16 nextafter on CPU"),
    OpSpec("bitwise_shifts_inplace", lambda m, a: (a * 1).bitwise_left_shift_(2).bitwise_right_shift_(1),
           [Arg((3, 4), kind="int", low=-8, high=8)], grad=False, fd=False),
    OpSpec("fill", lambda m, a: m.fill(a, 2.5), [Arg((2, 3))], grad=False, fd=False),
    OpSpec("fill_tensor_value", lambda m, a, v: m.fill(a, v.sum()), [Arg((2, 3), grad=False), Arg((2,))]),
    # top-level forms, creation and conversion
    OpSpec("addmv_toplevel", lambda m, a, mat, v: m.addmv_(a * 1, mat, v, beta=0.5, alpha=2.0),
           [Arg((3,)), Arg((3, 4)), Arg((4,))]),
    OpSpec("get_device_is_inference", lambda m, a: m.tensor([m.get_device(a.cpu()), int(m.is_inference(a)),
                                                             int(m.is_distributed(a))]),
           [Arg((2,))], grad=False, fd=False),
    OpSpec("range_end_inclusive", lambda m, a: m.range(1, 2, 0.25) * a, [Arg((5,))]),
    OpSpec("range_int_dtype", lambda m: m.range(-3, 4, 2, dtype=m.int64), [], grad=False, fd=False),
    OpSpec("resize_as_inplace", lambda m, a, t: (a * 1).resize_as_(t), [Arg((2, 3), grad=False), Arg((6,))],
           grad=False, fd=False),
    OpSpec("histogramdd", lambda m, a, w: (lambda r: (r[0], *r[1]))(m.histogramdd(a, bins=[3, 2], weight=w)),
           [Arg((20, 2)), Arg((20,), kind="positive")], grad=False, fd=False),
    OpSpec("histogramdd_range_density", lambda m, a: (lambda r: (r[0], *r[1]))(
        m.histogramdd(a, bins=4, range=[-1.0, 1.0, -2.0, 2.0], density=True)), [Arg((3, 10, 2))],
           grad=False, fd=False),
    OpSpec("dlpack_round_trip", lambda m, a: m.from_dlpack(m.to_dlpack(a.detach().cpu())).to(a.device) * a,
           [Arg((2, 3))], fd=False,
           dtypes=("float32", "float64"), notes="no fd: the shared memory sees the perturbation too; NumPy's "
           "DLPack export has no bfloat16 (ml_dtypes) code"),
    OpSpec("frombuffer", lambda m, a: m.frombuffer(bytearray(b"\x01\x00\xff\xff\x07\x00\x00\x01"),
                                                  dtype=m.int16, count=3, offset=2).to(a.device) * a,
           [Arg((3,))], dtypes=("float32",), notes="int16 times float: the dtype axis adds nothing; the "
           "buffer is host memory (moved to the input's device)"),
]
