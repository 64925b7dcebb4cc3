"""Specs for sparse COO tensors (shardflow/ops/sparse_coo.py). Each spec builds its sparse
operand inside (``sparse_coo_tensor`` from random indices with duplicates, or
``to_sparse`` of a dense tensor with zeros) and returns dense results, so the harness
compares values and the gradients reaching the dense operand and the sparse values with
torch's and with float64 finite differences."""

from shardflow.testing.opspec import Arg, OpSpec

IDX = Arg((2, 7), kind="index", high=4)  # 7 entries of a 4 x 4 matrix, duplicates likely
NO_BF16 = ("float32", "float64")
CROW, COL = [0, 2, 3, 5], [0, 2, 1, 0, 2]


def S(m, i, v, size=(4, 4)):
    return m.sparse_coo_tensor(i, v, size)


SPECS = [
    OpSpec("sparse_coo_to_dense", lambda m, i, v: S(m, i, v).to_dense(), [IDX, Arg((7,))]),
    OpSpec("sparse_coo_hybrid_to_dense", lambda m, i, v: S(m, i, v, (4, 4, 3)).to_dense(), [IDX, Arg((7, 3))]),
    OpSpec("sparse_coo_inferred_size", lambda m, i, v: m.sparse_coo_tensor(i, v).to_dense() * 1, [IDX, Arg((7,))]),
    OpSpec("sparse_coalesce_values", lambda m, i, v: S(m, i, v).coalesce().values() * 2, [IDX, Arg((7,))]),
    OpSpec("sparse_mm", lambda m, i, v, d: m.sparse.mm(S(m, i, v), d), [IDX, Arg((7,)), Arg((4, 3))], dtypes=NO_BF16),
    OpSpec("spmm_vector", lambda m, i, v, d: m.spmm(S(m, i, v), d[:, None])[:, 0], [IDX, Arg((7,)), Arg((4,))], dtypes=NO_BF16),
    OpSpec("sparse_mm_dense_grad_only", lambda m, i, v, d: m.mm(S(m, i, v), d), [IDX, Arg((7,), grad=False), Arg((4, 2))], dtypes=NO_BF16),
    OpSpec("sparse_matmul_operator_coalesced", lambda m, i, v, d: S(m, i, v).coalesce() @ d + m.matmul(S(m, i, v), d), [IDX, Arg((7,)), Arg((4, 2))], dtypes=NO_BF16),
    OpSpec("dense_mm_sparse", lambda m, d, i, v: m.mm(d, S(m, i, v)) + d @ S(m, i, v).coalesce(), [Arg((2, 4)), IDX, Arg((7,))], dtypes=NO_BF16),
    OpSpec("to_sparse_mm", lambda m, a, d: m.sparse.mm(m.relu(a).to_sparse(), d), [Arg((3, 4)), Arg((4, 2))], dtypes=NO_BF16),
    OpSpec("to_sparse_roundtrip", lambda m, a: m.relu(a).to_sparse().to_dense(), [Arg((3, 4))]),
    OpSpec("to_sparse_values", lambda m, a: m.relu(a).to_sparse().values() * 3, [Arg((3, 4))]),
    # CSR/CSC (shardflow/ops/sparse_compressed.py): a fixed 3 x 3 pattern, random values
    OpSpec("sparse_csr_mm", lambda m, v, d: m.sparse_csr_tensor(m.tensor(CROW), m.tensor(COL), v, (3, 3)) @ d, [Arg((5,)), Arg((3, 2))], dtypes=NO_BF16),
    OpSpec("sparse_csc_to_dense", lambda m, v: m.sparse_csc_tensor(m.tensor(CROW), m.tensor(COL), v).to_dense(), [Arg((5,), grad=False)], grad=False),
    OpSpec("sparse_compressed_mm", lambda m, d, v: m.mm(d, m.sparse_compressed_tensor(m.tensor(CROW), m.tensor(COL), v, (3, 3), layout=m.sparse_csr)), [Arg((2, 3)), Arg((5,))], dtypes=NO_BF16),
    OpSpec("sparse_transpose_scale_add", lambda m, i, v, d: m.sparse.mm((S(m, i, v).t() * 2.0 + S(m, i, v)) / 3.0, d), [IDX, Arg((7,)), Arg((4, 2))], dtypes=NO_BF16),
]
