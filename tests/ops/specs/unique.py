from shardflow.testing.opspec import Arg, OpSpec

NG = dict(grad=False, fd=False)
INT = dict(kind="int", low=0, high=4)

SPECS = [
    OpSpec("unique_flat", lambda m, a: m.unique(a), [Arg((4, 5), **INT)], **NG),
    OpSpec("unique_inverse_counts", lambda m, a: m.unique(a, return_inverse=True, return_counts=True),
           [Arg((3, 6), **INT)], **NG),
    OpSpec("unique_method_unsorted", lambda m, a: a.unique(sorted=False, return_counts=True),
           [Arg((7,), **INT)], **NG),
    OpSpec("unique_float", lambda m, a: m.unique(m.round(a), return_inverse=True), [Arg((3, 4))], **NG),
    OpSpec("unique_dim0", lambda m, a: m.unique(m.cat([a, a[:1]]), dim=0, return_inverse=True,
                                                return_counts=True), [Arg((3, 2), kind="int", low=0, high=2)], **NG),
    OpSpec("unique_dim1", lambda m, a: m.unique(a, dim=-1, return_inverse=True), [Arg((2, 6), kind="int", low=0, high=2)], **NG),
    OpSpec("unique_consecutive_inverse_counts", lambda m, a: m.unique_consecutive(a, return_inverse=True, return_counts=True),
           [Arg((3, 5), kind="int", low=0, high=2)], **NG),
    OpSpec("unique_consecutive_dim0", lambda m, a: a.unique_consecutive(return_counts=True, dim=0),
           [Arg((6, 2), kind="int", low=0, high=2)], **NG),
]
