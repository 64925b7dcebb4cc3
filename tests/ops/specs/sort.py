from shardflow.testing.opspec import Arg, OpSpec

D = dict(distinct=True)
NG = dict(grad=False, fd=False)

SPECS = [
    OpSpec("sort_last", lambda m, a: m.sort(a), [Arg((3, 5), **D)]),
    OpSpec("sort_dim0_desc", lambda m, a: m.sort(a, 0, descending=True), [Arg((4, 3), **D)]),
    OpSpec("sort_method_stable", lambda m, a: a.sort(dim=1, stable=True), [Arg((2, 4, 3), **D)]),
    OpSpec("sort_values_attr", lambda m, a: m.sort(a, -1, True).values * 3, [Arg((3, 4), **D)]),
    OpSpec("sort_1d", lambda m, a: m.sort(a), [Arg((6,), **D)]),
    OpSpec("sort_int", lambda m, a: m.sort(a, descending=True), [Arg((3, 6), kind="int", low=-4, high=4)], **NG),
    OpSpec("argsort", lambda m, a: m.argsort(a, 1), [Arg((3, 5), **D)], **NG),
    OpSpec("argsort_desc", lambda m, a: a.argsort(dim=0, descending=True), [Arg((4, 3), **D)], **NG),
    OpSpec("argsort_int_stable", lambda m, a: m.argsort(a, dim=-1, stable=True), [Arg((3, 8), kind="int", low=0, high=3)], **NG),
    OpSpec("argsort_int_stable_desc", lambda m, a: m.argsort(a, dim=-1, descending=True, stable=True), [Arg((3, 8), kind="int", low=0, high=3)], **NG),
    OpSpec("msort", lambda m, a: m.msort(a), [Arg((4, 3), **D)]),
    OpSpec("topk", lambda m, a: m.topk(a, 2), [Arg((3, 5), **D)]),
    OpSpec("topk_partition_path", lambda m, a: m.topk(a, 3, dim=1), [Arg((2, 20), **D)]),
    OpSpec("topk_smallest_dim0", lambda m, a: a.topk(2, dim=0, largest=False), [Arg((5, 3), **D)]),
    OpSpec("topk_smallest_partition", lambda m, a: m.topk(a, 2, largest=False), [Arg((3, 16), **D)]),
    OpSpec("topk_k_eq_n", lambda m, a: m.topk(a, 4), [Arg((2, 4), **D)]),
    OpSpec("topk_values_attr", lambda m, a: m.topk(a, 3, -1).values.sum(), [Arg((2, 12), **D)]),
    OpSpec("kthvalue", lambda m, a: m.kthvalue(a, 2), [Arg((3, 5), **D)]),
    OpSpec("kthvalue_dim0_keepdim", lambda m, a: a.kthvalue(3, 0, True), [Arg((4, 3), **D)]),
    OpSpec("median_all", lambda m, a: m.median(a), [Arg((3, 4), **D)]),
    OpSpec("median_all_odd", lambda m, a: a.median(), [Arg((5,), **D)]),
    OpSpec("median_dim", lambda m, a: m.median(a, 1), [Arg((3, 4), **D)]),
    OpSpec("median_dim_keepdim", lambda m, a: m.median(a, 0, keepdim=True), [Arg((5, 2), **D)]),
]
