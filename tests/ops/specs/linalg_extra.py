"""Specs for the matrix functions and ``torch.linalg`` names (shardflow/ops/linalg_ops.py,
linalg.py), the extra shape ops (shape_extra.py) and indexed writes (index_extra.py)."""


from shardflow.testing.opspec import Arg, OpSpec

NO_BF16 = ("float32", "float64")
LA_NOTE = "torch's CPU linear algebra has no bfloat16 kernels"
I = dict(kind="index", grad=False)


def _well_conditioned(m, a):
    """``a`` plus 3 I: invertible with a moderate condition number (finite differences)."""
    return a + 3 * m.eye(a.shape[-1], dtype=a.dtype)


def _la(name, fn, inputs, **kw):
    return OpSpec(name, fn, inputs, dtypes=NO_BF16, notes=LA_NOTE, **kw)


def _no_grad(name, fn, inputs, **kw):
    return OpSpec(name, fn, inputs, grad=False, fd=False, **kw)


SPECS = [
    # ---------------------------------------------------------------- inverses and determinants
    _la("inverse", lambda m, a: m.inverse(_well_conditioned(m, a)), [Arg((3, 3))]),
    _la("inverse_batched_method", lambda m, a: _well_conditioned(m, a).inverse(), [Arg((2, 3, 3))]),
    _la("linalg_inv", lambda m, a: m.linalg.inv(_well_conditioned(m, a)), [Arg((2, 2, 2))]),
    _la("det", lambda m, a: m.det(_well_conditioned(m, a)), [Arg((2, 3, 3))]),
    _la("det_method", lambda m, a: a.det(), [Arg((3, 3))]),
    _la("linalg_det", lambda m, a: m.linalg.det(_well_conditioned(m, a)), [Arg((4, 4))]),
    _la("slogdet", lambda m, a: m.slogdet(a)[1], [Arg((2, 3, 3))]),
    _la("linalg_slogdet_sign", lambda m, a: m.linalg.slogdet(a).sign * m.linalg.slogdet(a).logabsdet, [Arg((3, 3))]),
    _la("logdet", lambda m, a: m.logdet(_well_conditioned(m, a)), [Arg((3, 3))]),
    _la("matrix_power", lambda m, a: m.matrix_power(a, 3), [Arg((2, 3, 3))]),
    _la("matrix_power_neg_zero", lambda m, a: m.matrix_power(_well_conditioned(m, a), -2) + a.matrix_power(0),
        [Arg((3, 3))]),
    _la("linalg_solve", lambda m, a, b: m.linalg.solve(_well_conditioned(m, a), b), [Arg((2, 3, 3)), Arg((2, 3, 2))]),
    _la("linalg_solve_vector", lambda m, a, b: m.linalg.solve(_well_conditioned(m, a), b), [Arg((3, 3)), Arg((3,))]),
    _la("linalg_solve_right", lambda m, a, b: m.linalg.solve(_well_conditioned(m, a), b, left=False),
        [Arg((3, 3)), Arg((2, 3))]),
    # ---------------------------------------------------------------- products
    OpSpec("cross", lambda m, a, b: m.cross(a, b, dim=1), [Arg((2, 3, 4)), Arg((2, 3, 4))]),
    OpSpec("cross_method_dim_last", lambda m, a, b: a.cross(b, dim=-1), [Arg((4, 3)), Arg((1, 3))]),
    OpSpec("linalg_cross_namespace", lambda m, a, b: m.linalg.cross(a, b), [Arg((2, 3)), Arg((2, 3))]),
    OpSpec("kron", lambda m, a, b: m.kron(a, b), [Arg((2, 3)), Arg((3, 2))]),
    OpSpec("kron_ranks", lambda m, a, b: a.kron(b), [Arg((3,)), Arg((2, 2))]),
    OpSpec("tensordot", lambda m, a, b: m.tensordot(a, b), [Arg((2, 3, 4)), Arg((3, 4, 2))]),
    OpSpec("tensordot_pairs", lambda m, a, b: m.tensordot(a, b, dims=([0, 2], [1, 0])), [Arg((2, 3, 4)), Arg((4, 2, 5))]),
    OpSpec("cdist", lambda m, a, b: m.cdist(a, b), [Arg((2, 4, 3)), Arg((2, 5, 3))]),
    OpSpec("cdist_p1", lambda m, a, b: m.cdist(a, b, p=1.0), [Arg((4, 3)), Arg((2, 3))]),
    OpSpec("addmv_beta_alpha", lambda m, i, a, v: m.addmv(i, a, v, beta=0.5, alpha=2), [Arg((3,)), Arg((3, 4)), Arg((4,))]),
    OpSpec("addmv_method", lambda m, i, a, v: i.addmv(a, v), [Arg((3,)), Arg((3, 4)), Arg((4,))]),
    OpSpec("addr_alpha", lambda m, i, a, b: m.addr(i, a, b, alpha=3), [Arg((3, 4)), Arg((3,)), Arg((4,))]),
    OpSpec("addbmm", lambda m, i, a, b: m.addbmm(i, a, b, beta=2), [Arg((3, 2)), Arg((4, 3, 5)), Arg((4, 5, 2))]),
    OpSpec("chain_matmul", lambda m, a, b, c: m.chain_matmul(a, b, c), [Arg((2, 3)), Arg((3, 4)), Arg((4, 2))]),
    OpSpec("linalg_multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [Arg((3,)), Arg((3, 4)), Arg((4,))]),
    OpSpec("linalg_matrix_norm", lambda m, a: m.linalg.matrix_norm(a) + m.linalg.matrix_norm(a, 1)
           + m.linalg.matrix_norm(a, float("-inf")), [Arg((2, 3, 4), kind="nonzero")], dtypes=NO_BF16,
           notes="max/min of absolute sums: bfloat16 rounding makes ties, which split the gradient"),
    OpSpec("linalg_norm", lambda m, a: m.linalg.norm(a) + m.linalg.norm(a, 3, dim=1).sum(), [Arg((3, 4))]),
    OpSpec("linalg_norm_matrix_ord", lambda m, a: m.linalg.norm(a, float("inf")), [Arg((3, 4), kind="nonzero")],
           dtypes=NO_BF16, notes="max of absolute row sums: bfloat16 rounding makes ties"),
    OpSpec("linalg_vecdot_diagonal", lambda m, a, b: m.linalg.vecdot(a, b) + m.linalg.diagonal(a).sum(),
           [Arg((3, 3)), Arg((3, 3))]),
    # ---------------------------------------------------------------- shape extras
    OpSpec("atleast_1d_2d_3d", lambda m, a, b: m.atleast_1d(a).sum() + m.atleast_2d(b).sum(0).sum()
           + m.atleast_3d(b).sum(), [Arg(()), Arg((4,))]),
    OpSpec("atleast_3d_many", lambda m, a, b: m.cat([t.reshape(-1) for t in m.atleast_3d(a, b)]), [Arg((2, 3)), Arg((3,))]),
    OpSpec("column_stack", lambda m, a, b: m.column_stack([a, b]), [Arg((3,)), Arg((3, 2))]),
    OpSpec("dstack_row_stack", lambda m, a, b: m.dstack([a, b]).sum(-1) + m.row_stack([a, b])[:2], [Arg((2, 3)), Arg((2, 3))]),
    OpSpec("hsplit_vsplit_dsplit", lambda m, a: m.hsplit(a, 2)[1].sum() + m.vsplit(a, [1])[1].sum()
           + m.dsplit(a, 2)[0].sum(), [Arg((3, 4, 2))]),
    OpSpec("rot90", lambda m, a: m.rot90(a) + m.rot90(a, 2).flip(0, 1) + m.rot90(a, -1).flip(0, 1), [Arg((3, 3))]),
    OpSpec("rot90_dims", lambda m, a: a.rot90(1, [1, 2]), [Arg((2, 3, 4))]),
    OpSpec("block_diag", lambda m, a, b, c: m.block_diag(a, b, c), [Arg((2, 3)), Arg(()), Arg((2,))]),
    OpSpec("cartesian_prod", lambda m, a, b: m.cartesian_prod(a, b), [Arg((2,)), Arg((3,))]),
    OpSpec("combinations", lambda m, a: m.combinations(a, 2) + 0 * m.combinations(a, 2, with_replacement=True)[:3],
           [Arg((3,))]),
    _no_grad("tril_triu_indices", lambda m: m.cat([m.tril_indices(3, 4, -1), m.triu_indices(4, 3, 1)], 1), []),
    _no_grad("unravel_index", lambda m, i: m.stack(m.unravel_index(i, (3, 4))), [Arg((5,), high=12, **I)]),
    OpSpec("broadcast_shapes", lambda m, a: a.expand(m.broadcast_shapes(a.shape, (2, 1, 4))) * 1, [Arg((3, 1))]),
    # ---------------------------------------------------------------- indexed writes
    OpSpec("index_copy", lambda m, a, s: m.index_copy(a, 1, m.tensor([3, 0]), s), [Arg((3, 4)), Arg((3, 2))]),
    OpSpec("index_copy_inplace", lambda m, a, s: (a * 1).index_copy_(0, m.tensor([2, 0]), s), [Arg((3, 2)), Arg((2, 2))]),
    OpSpec("scatter_reduce_sum", lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([[0, 1, 0], [2, 2, 1]]), s, "sum"),
           [Arg((3, 3)), Arg((2, 3))]),
    OpSpec("scatter_reduce_mean_no_self", lambda m, a, s: a.scatter_reduce(1, m.tensor([[0, 0, 2], [1, 1, 1]]), s, "mean",
                                                                          include_self=False), [Arg((2, 3)), Arg((2, 3))]),
    OpSpec("scatter_reduce_amax", lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([0, 1, 0, 1]), s, "amax"),
           [Arg((3,), distinct=True), Arg((4,), distinct=True)]),
    OpSpec("scatter_reduce_amin_no_self", lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([0, 1, 0, 1]), s, "amin",
                                                                          include_self=False),
           [Arg((3,), distinct=True), Arg((4,), distinct=True)]),
    OpSpec("scatter_reduce_prod", lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([0, 2, 0, 2]), s, "prod"),
           [Arg((3,), kind="nonzero"), Arg((4,), kind="nonzero")]),
    OpSpec("scatter_reduce_inplace", lambda m, a, s: (a * 1).scatter_reduce_(0, m.tensor([1, 1]), s, "sum"),
           [Arg((3,)), Arg((2,))]),
    OpSpec("masked_scatter", lambda m, a, k, s: m.masked_scatter(a, k, s), [Arg((3, 4)), Arg((3, 4), kind="bool"),
                                                                          Arg((12,))]),
    OpSpec("masked_scatter_bcast_inplace", lambda m, a, k, s: (a * 1).masked_scatter_(k, s),
           [Arg((2, 3)), Arg((3,), kind="bool"), Arg((2, 4))]),
    OpSpec("fill_diagonal_", lambda m, a: (a * 1).fill_diagonal_(2.5), [Arg((3, 4))]),
    OpSpec("fill_diagonal_wrap", lambda m, a: (a * 1).fill_diagonal_(-1.0, wrap=True), [Arg((7, 3))]),
]
