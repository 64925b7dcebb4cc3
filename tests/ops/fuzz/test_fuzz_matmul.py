"""Differential fuzzing of matrix products and padding against PyTorch (see ``_diff.py``):
matmul with 1-D operands and batch broadcasting, mm, bmm, einsum (subscripts with
broadcasting ``...``, repeated and summed indices), F.pad in every mode (negative pads
crop), with empty dims, non-contiguous operands and integer dtypes; backward for floats.
Products are compared at a tolerance scaled to the output (summation order differs)."""

from hypothesis import given
from hypothesis import strategies as st

from ._diff import FUZZ, check, inp

DT = ("float32", "float64", "int64", "bfloat16", "float16")


@st.composite
def matmul_case(draw):
    dt = draw(st.sampled_from(DT))
    n, k, m = (draw(st.integers(0, 3)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    kind = draw(st.sampled_from(["mm", "mv", "vm", "vv", "batched", "bcast"]))
    if kind == "mm":
        sa, sb = (n, k), (k, m)
    elif kind == "mv":
        sa, sb = batch + (n, k), (k,)
    elif kind == "vm":
        sa, sb = (k,), batch + (k, m)
    elif kind == "vv":
        sa, sb = (k,), (k,)
    elif kind == "batched":
        sa, sb = batch + (n, k), batch + (k, m)
    else:
        sa, sb = batch + (n, k), (k, m) if not batch else (1,) * len(batch[1:]) + (k, m)
    a = draw(inp(shape=sa, dtypes=(dt,), specials=False))
    b = draw(inp(shape=sb, dtypes=(dt,), specials=False))
    return kind, a, b


@FUZZ
@given(case=matmul_case(), grad=st.booleans())
def test_matmul(case, grad):
    kind, a, b = case
    check(lambda L, x, y: L.matmul(x, y), [a, b], grad=grad, scale_tol=4)
    if kind == "mm":
        check(lambda L, x, y: L.mm(x, y), [a, b], grad=grad, scale_tol=4)
        check(lambda L, x, y: x @ y.T.T, [a, b], scale_tol=4)
    if kind == "batched" and a.values.ndim == 3:
        check(lambda L, x, y: L.bmm(x, y), [a, b], grad=grad, scale_tol=4)


EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 1)]), ("ii->i", [(3, 3)]),
           ("ii", [(3, 3)]), ("i,j->ij", [(2,), (3,)]), ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]),
           ("ij->", [(2, 3)]), ("ij->ji", [(0, 3)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 2), (1, 2, 4, 2)]),
           ("i,i->", [(4,), (4,)]), ("ijk->kj", [(2, 3, 1)]), ("a...,a->...", [(3, 2, 2), (3,)])]


@FUZZ
@given(k=st.integers(0, len(EINSUMS) - 1), data=st.data(), grad=st.booleans())
def test_einsum(k, data, grad):
    eq, shapes = EINSUMS[k]
    dt = data.draw(st.sampled_from(["float32", "float64"]))  # (torch raises for mixed dtypes in most contractions)
    ins = [data.draw(inp(shape=s, dtypes=(dt,), specials=False)) for s in shapes]
    check(lambda L, *xs: L.einsum(eq, *xs), ins, grad=grad, scale_tol=4)


@st.composite
def pad_case(draw):
    mode = draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    nd = draw(st.integers(1, 3)) if mode != "constant" else draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(nd + draw(st.integers(1, 2))))
    if mode == "constant":
        shape = tuple(draw(st.integers(0, 3)) for _ in shape)
    pad = []
    for k in range(nd):
        n = shape[-1 - k]
        lim = n - 1 if mode == "reflect" else n
        pad += [draw(st.integers(-1 if mode == "constant" else 0, max(lim, 0))) for _ in range(2)]
    x = draw(inp(shape=shape, dtypes=("float32", "float64", "int64") if mode == "constant" else ("float32", "float64")))
    return mode, pad, x


@FUZZ
@given(case=pad_case(), grad=st.booleans())
def test_pad(case, grad):
    mode, pad, x = case
    value = 1.5 if x.values.dtype.kind == "f" else 2
    check(lambda L, t: L.nn.functional.pad(t, pad, mode=mode, value=value if mode == "constant" else None),
          [x], grad=grad)

