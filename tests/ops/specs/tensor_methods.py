"""Specs for the Tensor methods and torch functions of shardflow/ops/tensor_methods.py:
in-place forms (values and view changes) and the creation/alias functions."""

from shardflow.testing.opspec import Arg, OpSpec

N = Arg((3, 4))


def _no_grad(name, fn, inputs, **kw):
    return OpSpec(name, fn, inputs, grad=False, fd=False, **kw)


SPECS = [
    # ---------------------------------------------------------------- in-place values
    OpSpec("tril_triu_inplace", lambda m, a: (a * 1).tril_(1) + (a * 1).triu_(-1), [N]),
    OpSpec("cumsum_cumprod_inplace", lambda m, a: (a * 1).cumsum_(1) + (a * 1).cumprod_(0), [N]),
    OpSpec("addmm_inplace", lambda m, i, a, b: (i * 1).addmm_(a, b, beta=0.5, alpha=2), [N, Arg((3, 2)), Arg((2, 4))]),
    OpSpec("baddbmm_inplace", lambda m, i, a, b: (i * 1).baddbmm_(a, b), [Arg((2, 3, 4)), Arg((2, 3, 2)), Arg((2, 2, 4))]),
    OpSpec("addmv_addr_addbmm_inplace", lambda m, i, v, w: (i * 1).addr_(v, w) + (i * 1).addbmm_(v.reshape(1, 3, 1),
                                                                                                w.reshape(1, 1, 4)),
           [N, Arg((3,)), Arg((4,))]),
    OpSpec("addmv_inplace", lambda m, i, a, v: (i * 1).addmv_(a, v), [Arg((3,)), N, Arg((4,))]),
    OpSpec("reciprocal_sgn_inplace", lambda m, a: (a * 1).reciprocal_() + (a * 1).sgn_(), [Arg((3, 4), kind="nonzero")]),
    OpSpec("alias_inplace", lambda m, a, b: (a * 1).multiply_(b) + (a * 1).subtract_(b) + (a * 1).divide_(b)
           + (a * 1).true_divide_(b), [N, Arg((3, 4), kind="nonzero")]),
    _no_grad("compare_inplace_keeps_dtype", lambda m, a, b: m.stack([(a * 1).eq_(b), (a * 1).ne_(b), (a * 1).lt_(b),
                                                                     (a * 1).le_(b), (a * 1).gt_(b), (a * 1).ge_(b),
                                                                     (a * 1).greater_(b), (a * 1).less_equal_(b)]),
             [Arg((3, 4), kind="int", low=0, high=3), Arg((3, 4), kind="int", low=0, high=3)]),
    _no_grad("logical_inplace_keeps_dtype", lambda m, a, b: m.stack([(a * 1).logical_and_(b), (a * 1).logical_or_(b),
                                                                     (a * 1).logical_xor_(b), (a * 1).logical_not_()]),
             [Arg((3, 4), kind="int", low=0, high=2), Arg((3, 4), kind="int", low=0, high=2)]),
    # ---------------------------------------------------------------- in-place view changes
    OpSpec("t_inplace", lambda m, a: (a * 1).t_(), [N]),
    OpSpec("transpose_swap_inplace", lambda m, a: (a * 1).transpose_(0, 2) + (a * 1).swapaxes_(0, 2)
           + (a * 1).swapdims_(2, 0), [Arg((2, 3, 4))]),
    OpSpec("unsqueeze_squeeze_inplace", lambda m, a: (a * 1).unsqueeze_(1).squeeze_(), [N]),
    OpSpec("sum_to_size", lambda m, a: a.sum_to_size(1, 4) + a.sum_to_size((3, 1)).sum(), [N]),
    OpSpec("new_from_data_and_sizes", lambda m, a: a * a.new([1.0, 2.0, 3.0, 4.0]) + a.new(3, 4).fill_(1.5), [N]),
    # ---------------------------------------------------------------- functions
    _no_grad("scalar_tensor", lambda m: m.scalar_tensor(3) + m.scalar_tensor(2, dtype=m.float64), []),
    _no_grad("logspace", lambda m: m.logspace(-1, 2, 5) + m.logspace(0, 3, 5, base=2), []),
    _no_grad("empty_strided", lambda m: m.empty_strided((2, 3), (3, 1)).fill_(2.0), []),
    OpSpec("asarray", lambda m, a: m.asarray(a) * 2 + m.asarray([1.0, 2.0, 3.0, 4.0]), [N]),
    _no_grad("asarray_dtype_copy", lambda m, a: m.asarray(a, dtype=m.float64, copy=True), [N]),
    OpSpec("rsub", lambda m, a, b: m.rsub(a, b, alpha=2) + m.rsub(a, 3.0), [N, N]),
    OpSpec("detach_function", lambda m, a, b: a * m.detach(b), [N, N], fd=False,
           notes="detach cuts the graph on purpose: b's finite difference is not its (zero) gradient"),
]
