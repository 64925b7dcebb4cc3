import math

from shardflow.testing.opspec import Arg, OpSpec

D = dict(distinct=True)

SPECS = [
    # sum / mean (existing)
    OpSpec("sum_all", lambda m, a: m.sum(a), [Arg((3, 4))]),
    OpSpec("sum_dim", lambda m, a: a.sum(1), [Arg((3, 4, 2))]),
    OpSpec("sum_dims_keepdim", lambda m, a: m.sum(a, (0, 2), keepdim=True), [Arg((3, 4, 2))]),
    OpSpec("sum_int", lambda m, a: m.sum(a, 0), [Arg((3, 4), kind="int", low=-5, high=5)], grad=False, fd=False),
    OpSpec("mean_all", lambda m, a: a.mean(), [Arg((3, 4))]),
    OpSpec("mean_dim_neg", lambda m, a: m.mean(a, -1, keepdim=True), [Arg((2, 3, 4))]),
    # prod
    OpSpec("prod_all", lambda m, a: m.prod(a), [Arg((2, 3), kind="nonzero")]),
    OpSpec("prod_dim", lambda m, a: a.prod(1), [Arg((3, 4), kind="nonzero")]),
    OpSpec("prod_dim_keepdim", lambda m, a: m.prod(a, 0, keepdim=True), [Arg((3, 4), kind="nonzero")]),
    OpSpec("prod_int", lambda m, a: m.prod(a, 1), [Arg((2, 3), kind="int", low=-3, high=4)], grad=False, fd=False),
    # max / min
    OpSpec("max_all", lambda m, a: m.max(a), [Arg((3, 4), **D)]),
    OpSpec("min_all", lambda m, a: a.min(), [Arg((3, 4), **D)]),
    OpSpec("max_dim", lambda m, a: m.max(a, 1), [Arg((3, 4), **D)]),
    OpSpec("max_dim_keepdim", lambda m, a: a.max(dim=0, keepdim=True), [Arg((3, 4, 2), **D)]),
    OpSpec("min_dim_neg", lambda m, a: m.min(a, -1), [Arg((2, 3, 4), **D)]),
    OpSpec("max_values_attr", lambda m, a: m.max(a, 1).values * 2, [Arg((3, 5), **D)]),
    OpSpec("min_indices_attr", lambda m, a: m.min(a, 0).indices, [Arg((3, 5), **D)], grad=False, fd=False),
    OpSpec("max_0d", lambda m, a: m.max(a, 0), [Arg((), **D)]),
    OpSpec("amax", lambda m, a: m.amax(a, 1), [Arg((3, 4), **D)]),
    OpSpec("amax_dims_keepdim", lambda m, a: m.amax(a, (0, 2), keepdim=True), [Arg((3, 4, 2), **D)]),
    OpSpec("amin_all", lambda m, a: m.amin(a), [Arg((3, 4), **D)]),
    OpSpec("amin_dim", lambda m, a: a.amin(-1), [Arg((2, 3, 4), **D)]),
    OpSpec("aminmax_dim", lambda m, a: tuple(m.aminmax(a, dim=1)), [Arg((3, 4), **D)]),
    OpSpec("argmax_all", lambda m, a: m.argmax(a), [Arg((3, 4), **D)], grad=False, fd=False),
    OpSpec("argmax_dim", lambda m, a: a.argmax(1), [Arg((3, 4), **D)], grad=False, fd=False),
    OpSpec("argmin_dim_keepdim", lambda m, a: m.argmin(a, 0, keepdim=True), [Arg((3, 4), **D)], grad=False, fd=False),
    OpSpec("argmax_keepdim_nodim", lambda m, a: m.argmax(a, keepdim=True), [Arg((3, 4), **D)], grad=False, fd=False),
    # var / std
    OpSpec("var_all", lambda m, a: m.var(a), [Arg((3, 4))]),
    OpSpec("var_dim", lambda m, a: a.var(1), [Arg((3, 4))]),
    OpSpec("var_biased_positional", lambda m, a: m.var(a, 1, False), [Arg((3, 4))]),
    OpSpec("var_unbiased_flag", lambda m, a: m.var(a, False), [Arg((3, 4))]),
    OpSpec("var_correction_keepdim", lambda m, a: m.var(a, (0, 2), correction=2, keepdim=True), [Arg((3, 4, 2))]),
    OpSpec("std_all", lambda m, a: m.std(a), [Arg((3, 4))]),
    OpSpec("std_dim_unbiased_false", lambda m, a: a.std(0, unbiased=False), [Arg((3, 4))]),
    OpSpec("std_correction0", lambda m, a: m.std(a, -1, correction=0, keepdim=True), [Arg((2, 3, 4))]),
    OpSpec("var_mean", lambda m, a: m.var_mean(a, 1), [Arg((3, 4))]),
    OpSpec("std_mean_keepdim", lambda m, a: m.std_mean(a, dim=0, keepdim=True), [Arg((3, 4))]),
    # logsumexp
    OpSpec("logsumexp_dim", lambda m, a: m.logsumexp(a, 1), [Arg((3, 4))]),
    OpSpec("logsumexp_dims_keepdim", lambda m, a: a.logsumexp((0, 1), keepdim=True), [Arg((3, 4, 2))]),
    OpSpec("logsumexp_large", lambda m, a: m.logsumexp(a * 1000.0, -1), [Arg((3, 4))], atol=1e-3),
    # cumsum / cumprod
    OpSpec("cumsum", lambda m, a: m.cumsum(a, 1), [Arg((3, 4))]),
    OpSpec("cumsum_neg_dim", lambda m, a: a.cumsum(dim=-3), [Arg((3, 2, 2))]),
    OpSpec("cumsum_int", lambda m, a: m.cumsum(a, 0), [Arg((5,), kind="int", low=-3, high=3)], grad=False, fd=False),
    OpSpec("cumprod", lambda m, a: m.cumprod(a, 1), [Arg((3, 4), kind="nonzero")]),
    OpSpec("cumprod_dim0", lambda m, a: a.cumprod(0), [Arg((4, 2), kind="nonzero")]),
    # norms
    OpSpec("norm_fro", lambda m, a: m.norm(a), [Arg((3, 4))]),
    OpSpec("norm_dim", lambda m, a: a.norm(dim=1), [Arg((3, 4))]),
    OpSpec("norm_p1", lambda m, a: m.norm(a, p=1, dim=0, keepdim=True), [Arg((3, 4), kind="nonzero")]),
    OpSpec("norm_p3", lambda m, a: m.norm(a, 3, dim=1), [Arg((3, 4), kind="nonzero")]),
    OpSpec("vector_norm_2", lambda m, a: m.linalg.vector_norm(a) if m.__name__ == "torch" else m.vector_norm(a), [Arg((3, 4))]),
    OpSpec("vector_norm_inf", lambda m, a: (m.linalg.vector_norm if m.__name__ == "torch" else m.vector_norm)(a, ord=math.inf, dim=1), [Arg((3, 4), **D)]),
    OpSpec("vector_norm_neg_inf", lambda m, a: (m.linalg.vector_norm if m.__name__ == "torch" else m.vector_norm)(a, ord=-math.inf), [Arg((3, 4), **D)]),
    OpSpec("vector_norm_1_keepdim", lambda m, a: (m.linalg.vector_norm if m.__name__ == "torch" else m.vector_norm)(a, 1, (0, 1), keepdim=True), [Arg((3, 4), kind="nonzero")]),
    OpSpec("vector_norm_0", lambda m, a: (m.linalg.vector_norm if m.__name__ == "torch" else m.vector_norm)(a, 0, 1), [Arg((3, 4), kind="nonzero")], fd=False),
    # logical / counting
    OpSpec("all_dim", lambda m, a: m.all(a, 1), [Arg((3, 4), kind="bool")], grad=False, fd=False),
    OpSpec("any_all", lambda m, a: a.any(), [Arg((3, 4), kind="bool")], grad=False, fd=False),
    OpSpec("any_keepdim", lambda m, a: m.any(a, 0, keepdim=True), [Arg((3, 4), kind="bool")], grad=False, fd=False),
    OpSpec("count_nonzero", lambda m, a: m.count_nonzero(a, 1), [Arg((3, 4), kind="int", low=-1, high=2)], grad=False, fd=False),
    OpSpec("count_nonzero_all", lambda m, a: m.count_nonzero(a), [Arg((3, 4), kind="int", low=-1, high=2)], grad=False, fd=False),
]
