"""Known gaps of the dtype axis: (spec, dtype) cases that fail today, grouped by cause, with
the file where the fix belongs. ``test_op_reference.py`` leaves them out of the per-case test
and checks in ``test_known_dtype_gaps_still_fail`` that every one still fails (a strict
xfail): a listed case that starts passing fails the suite, so whoever fixes a cause deletes
its entry here, and a new failure is never hidden by this list (only the names below are
expected to fail, and only in the dtype given).

Found when the dtype axis was added (all but one in bfloat16, through ml_dtypes): NumPy promotes an
ml_dtypes bfloat16 array combined with a Python float, or multiplied in a BLAS/einsum path,
to float32 (``bf16_array + 2.0`` is float32; ``bf16 @ bf16`` is float32), and these ops did
not cast the result back (PyTorch returns bfloat16). All are fixed: the ops cast back with
``ops/_util.as_dtype_of`` (einsum and conv contract in float32 and round once); the one
float32/float64 gap, ``copy_``'s destination gradient, now is zeros as in PyTorch.
"""

# Every cause found so far is fixed; add a cause (a string naming the file where the fix
# belongs) and its cases as {dtype: {cause: [spec names]}} when a new gap is recorded.
KNOWN_GAPS: dict[str, dict[str, list[str]]] = {}


def known_gap(spec_name: str, dtype: str) -> str | None:
    """The recorded cause if (spec_name, dtype) is a known gap, else None."""
    for cause, names in KNOWN_GAPS.get(dtype, {}).items():
        if spec_name in names:
            return cause
    return None
