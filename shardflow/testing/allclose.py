"""``torch.testing.assert_allclose``: the form deprecated since PyTorch 1.12 (same
``FutureWarning``), kept because older test suites call it.

PyTorch's rules: non-tensor inputs become tensors (``expected`` in ``actual``'s dtype); without
``rtol``/``atol`` the tolerances are the larger of the two dtypes' from the old table (float16
1e-3/1e-3, float32 1e-4/1e-5, float64 1e-5/1e-8, anything else exact); then ``assert_close``
with ``equal_nan=True`` by default and dtypes not compared.
"""

from __future__ import annotations

import warnings

from ..autograd import Tensor
from ..ops.creation import tensor
from .comparison import assert_close

__all__ = ["assert_allclose"]

_OLD_PRECISIONS = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def _dtype_name(t: Tensor) -> str:
    return str(t.dtype).rpartition(".")[2]


def assert_allclose(actual, expected, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated: use ``assert_close`` (see the module docstring)."""
    __tracebackhide__ = True
    warnings.warn(
        "`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
        "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
        "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_OLD_PRECISIONS.get(_dtype_name(t), (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
