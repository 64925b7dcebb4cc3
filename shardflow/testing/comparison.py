"""``torch.testing.assert_close``: PyTorch's comparison of tensors, numbers and containers.

Inputs are paired recursively: sequences (not strings) item by item, mappings key by key,
then each pair is compared by the first kind that accepts both: ``None`` (both must be
None), booleans, Python/NumPy numbers (tolerances of int64 / float64 / complex128; with
``check_dtype`` their types must match), tensor-likes (two Tensors, or two objects of
related types that ``as_tensor`` accepts, e.g. two NumPy arrays). For tensor-likes the
attributes are compared first (shape, layout, ``stride()`` with ``check_stride``, device with
``check_device``, dtype with ``check_dtype``), then the values are promoted to a common dtype
and compared by ``|actual - expected| <= atol + rtol * |expected|`` (``isclose``; equal
infinities match; NaNs match only with ``equal_nan``). Default tolerances per dtype are
torch's (``_DTYPE_PRECISIONS``; the larger of the two inputs', 0 for integers and bool,
so those must be equal); giving one of ``rtol`` / ``atol`` without the other is a
ValueError. A failure raises ``AssertionError`` with torch's message ("Tensor-likes are not
close!", mismatched element count and percentage, greatest absolute and relative difference
with their indices, "The failure occurred for item [1]['a']"); ``msg`` replaces it (a string)
or rewrites it (a callable). Inputs no kind accepts give torch's TypeError.
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib

import numpy as np

from ..autograd import Tensor
from ..backend import as_dtype, promote_types

__all__ = ["assert_close"]

# {dtype name: (rtol, atol)}, torch's
_DTYPE_PRECISIONS = {
    "float16": (0.001, 1e-5),
    "bfloat16": (0.016, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (0.001, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
_NUMBER_DTYPE = {int: "int64", float: "float64", complex: "complex128"}


class _Mismatch(Exception):
    """One failed pair: the exception type, torch's message and the item path."""

    def __init__(self, type_: type, msg: str, id_: tuple = ()) -> None:
        super().__init__(msg)
        self.type, self.msg, self.id = type_, msg, id_

    def to_error(self, msg=None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    pass


def _dtype_name(d) -> str:
    return str(d).rsplit(".", 1)[-1]


def _tolerances(*names: str, rtol, atol, id_) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", id_)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(n, (0.0, 0.0)) for n in names], strict=True)
    return max(rtols), max(atols)


def _mismatch_msg(*, default_identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = f"{kind.title()} difference: {diff}" if idx is None else \
            f"Greatest {kind} difference: {diff} at index {idx}"
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{default_identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg(default_identifier="Scalars", extra=f"Expected {expected} but got {actual}.",
                         abs_diff=abs_diff, abs_idx=None, atol=atol, rel_diff=rel_diff, rel_idx=None,
                         rtol=rtol)


def _tensor_msg(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol, atol) -> str:
    n = matches.size
    mismatches = n - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    a, e, m = actual.reshape(-1), expected.reshape(-1), matches.reshape(-1)
    integral = a.dtype.kind in "biu"
    if integral:  # torch upcasts to int64; its int64 / int64 is a float32 division
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[m] = 0
        rel_diff = (abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)) if integral \
            else abs_diff / np.abs(e)
        rel_diff[m] = 0

    def unravel(i):
        return tuple(int(k) for k in np.unravel_index(int(i), matches.shape))

    ia, ir = np.argmax(abs_diff), np.argmax(rel_diff)  # the first NaN, if any, as torch.max
    return _mismatch_msg(default_identifier="Tensor-likes", extra=extra, abs_diff=abs_diff[ia].item(),
                         abs_idx=unravel(ia), atol=atol, rel_diff=rel_diff[ir].item(), rel_idx=unravel(ir),
                         rtol=rtol)


def _isclose(a: np.ndarray, e: np.ndarray, rtol, atol, equal_nan) -> np.ndarray:
    with np.errstate(all="ignore"):
        if rtol == 0 and atol == 0 or a.dtype.kind == "b":
            close = a == e
        else:
            close = (a == e) | (np.isfinite(np.abs(a - e)) & (np.abs(a - e) <= atol + rtol * np.abs(e)))
        if equal_nan and a.dtype.kind in "fc":
            close |= np.isnan(a) & np.isnan(e)
    return close


# ---------------------------------------------------------------- pair kinds
def _compare_none(actual, expected, id_, **_):
    if not (actual is None or expected is None):
        raise _Unsupported
    if not (actual is None and expected is None):
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id_)


def _compare_bool(actual, expected, id_, **_):
    if not all(isinstance(x, bool | np.bool_) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)
    if actual is not expected:
        raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", id_)


def _compare_number(actual, expected, id_, *, rtol, atol, equal_nan, check_dtype, **_):
    if not all(isinstance(x, int | float | complex | np.number) and not isinstance(x, bool)
               for x in (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = _tolerances(*(_NUMBER_DTYPE[type(x)] for x in (actual, expected)), rtol=rtol, atol=atol, id_=id_)
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", id_)
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_msg(actual, expected, rtol, atol), id_)


def _compare_tensor_like(actual, expected, id_, *, allow_subclasses, rtol, atol, equal_nan, check_device,
                         check_dtype, check_layout, check_stride, **_):
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Unsupported
    from .. import ops

    try:
        actual, expected = (x if isinstance(x, Tensor) else ops.as_tensor(x) for x in (actual, expected))
    except Exception:
        raise _Unsupported from None
    rtol, atol = _tolerances(_dtype_name(actual.dtype), _dtype_name(expected.dtype), rtol=rtol, atol=atol, id_=id_)

    def mismatch(attr, a, e):
        raise _Mismatch(AssertionError, f"The values for attribute '{attr}' do not match: {a} != {e}.", id_)

    if actual.shape != expected.shape:
        mismatch("shape", actual.shape, expected.shape)
    if actual.layout != expected.layout:
        if check_layout:
            mismatch("layout", actual.layout, expected.layout)
    elif check_stride and actual.stride() != expected.stride():
        mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        mismatch("dtype", actual.dtype, expected.dtype)
    if actual.layout != expected.layout or getattr(actual, "is_sparse", False):
        actual = actual.to_dense() if getattr(actual, "is_sparse", False) else actual
        expected = expected.to_dense() if getattr(expected, "is_sparse", False) else expected
    a, e = actual.detach().cpu().numpy(), expected.detach().cpu().numpy()
    if a.dtype != e.dtype:
        common = as_dtype(promote_types(actual.dtype, expected.dtype)).np
        a, e = a.astype(common), e.astype(common)
    matches = _isclose(a, e, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.ndim == 0:
        raise _Mismatch(AssertionError, _scalar_msg(a.item(), e.item(), rtol, atol), id_)
    raise _Mismatch(AssertionError, _tensor_msg(a, e, matches, rtol, atol), id_)


_PAIR_KINDS = (_compare_none, _compare_bool, _compare_number, _compare_tensor_like)


def _compare(actual, expected, id_, options) -> None:
    """Compare one pair, recursing into sequences and mappings (torch's ``originate_pairs``)."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and isinstance(expected, seq) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                            id_)
        for i in range(len(actual)):
            _compare(actual[i], expected[i], (*id_, i), options)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _Mismatch(AssertionError,
                            "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                            f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}", id_)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        for key in keys:
            _compare(actual[key], expected[key], (*id_, key), options)
        return
    for kind in _PAIR_KINDS:
        try:
            kind(actual, expected, id_, **options)
            return
        except _Unsupported:
            continue
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} "
                               f"and {type(expected)}.", id_)


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg=None) -> None:
    """Raise if ``actual`` and ``expected`` are not close (module docstring: rules and messages)."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as failure:
        raise failure.to_error(msg) from None
