"""Known gaps of the dtype axis: (spec, dtype) cases that fail today, grouped by cause, with
the file where the fix belongs. ``test_op_reference.py`` leaves them out of the per-case test
and checks in ``test_known_dtype_gaps_still_fail`` that every one still fails (a strict
xfail): a listed case that starts passing fails the suite, so whoever fixes a cause deletes
its entry here, and a new failure is never hidden by this list (only the names below are
expected to fail, and only in the dtype given).

Found when the dtype axis was added (all but one in bfloat16, through ml_dtypes): NumPy promotes an
ml_dtypes bfloat16 array combined with a Python float, or multiplied in a BLAS/einsum path,
to float32 (``bf16_array + 2.0`` is float32; ``bf16 @ bf16`` is float32), and these ops do
not cast the result back as the unary family does (``ops/elementwise.py``'s
``_same_dtype``). PyTorch returns bfloat16.
"""

_COPY_DEST_GRAD = ("ops/conversion.py: after (b * 1).copy_(a), b.grad is None where torch gives zeros (the "
                   "overwritten destination gets a zero gradient in PyTorch; None makes optimizers skip it)")

KNOWN_GAPS = {
    "float32": {_COPY_DEST_GRAD: ["copy_broadcast"]},
    "float64": {_COPY_DEST_GRAD: ["copy_broadcast"]},
    "bfloat16": {
        _COPY_DEST_GRAD: ["copy_broadcast"],
    },
}


def known_gap(spec_name: str, dtype: str) -> str | None:
    """The recorded cause if (spec_name, dtype) is a known gap, else None."""
    for cause, names in KNOWN_GAPS.get(dtype, {}).items():
        if spec_name in names:
            return cause
    return None
