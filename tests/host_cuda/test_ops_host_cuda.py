"""Every op of the spec table on ``device="cuda"`` with CuPy's host stand-in against the CPU:
the check of tests/gpu/test_cuda_ops.py, run without a GPU. A failure here is a place where
an op mixes NumPy and device arrays, converts a device array implicitly, or calls a NumPy
function CuPy lacks: it would fail on a GPU the same way."""

import pytest

from ..gpu.test_cuda_ops import SPECS, check_op_on_cuda


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_op_on_host_cuda_matches_cpu(spec):
    check_op_on_cuda(spec)
