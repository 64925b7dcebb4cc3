"""How a Tensor prints: PyTorch's ``repr``/``str`` format, character for character, and
``set_printoptions``.

Algorithm (PyTorch's ``torch/_tensor_str.py``, run on the NumPy array):

* One formatter for the whole tensor (or for its summary when it has more than
  ``threshold`` elements). Integers and bools print as Python prints them, right-aligned to
  the widest. Floats look at the non-zero finite values: all integral -> ``int_mode``
  (``1.``, ``-3.``); scientific notation (``1.0000e-05``) when ``max / min > 1000``,
  ``max > 1e8`` or ``min < 1e-4`` (of the absolute values); otherwise ``precision`` decimals
  (``0.1000``). Every element is right-aligned to the widest string.
* Rows are wrapped so that a line stays within ``linewidth``; nested dims are separated by
  ``dim - 1`` blank lines and indented one space per level; a summary keeps ``edgeitems``
  entries at each end of every dim with ``...`` between.
* Suffixes (``dtype=`` unless the dtype is the default float, int64 or bool; ``device=``
  off the CPU; ``grad_fn=<...>`` or ``requires_grad=True``; ``size=`` for empty tensors
  that are not 1-d) follow the contents, moved to a new line when the line would pass
  ``linewidth``.

Complex tensors print as PyTorch's ``1.0000+2.0000j``: the real and the imaginary parts
each get their own float formatter.

The only difference from PyTorch is the names it prints: ``dtype=shardflow.float64`` and
shardflow's backward function names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """``torch.set_printoptions``: ``profile`` ('default', 'short', 'full') first, then the
    given options; ``sci_mode`` None lets the formatter choose (as in PyTorch, every call
    resets it to the given value)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        for k, v in _PROFILES[profile].items():
            setattr(PRINT_OPTS, k, v)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Change the print options inside a ``with`` block."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses one element format for a whole array (see the module docstring)."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in np.unique(flat).tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        absval = np.abs(finite)
        lo, hi = float(absval.min()), float(absval.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        for v in np.unique(finite).tolist():
            if self.sci_mode:
                width = len(f"{v:.{p}e}")
            elif self.int_mode:
                width = len(f"{v:.0f}") + 1  # room for the trailing '.'
            else:
                width = len(f"{v:.{p}f}")
            self.max_width = max(self.max_width, width)

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                s = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                s = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    s += "."
            else:
                s = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            s = f"{value}"
        return (self.max_width - len(s)) * " " + s


class _ComplexFormatter:
    """PyTorch's complex format: one float formatter for the real parts and one for the
    imaginary parts, joined as ``re+imj`` (the imaginary part's padding dropped)."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)
        self.max_width = self.real.max_width + self.imag.max_width + 1  # + the 'j'

    def format(self, value) -> str:
        value = complex(value)
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements a summary shows (``edgeitems`` at each end of every dim)."""
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:e], a[-e:]]) if a.shape[0] > 2 * e else a
    if not e:
        return np.empty([0] * a.ndim, a.dtype)
    rows = list(range(e)) + list(range(len(a) - e, len(a))) if a.shape[0] > 2 * e else range(len(a))
    return np.stack([_summarized(a[i]) for i in rows])


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [fmt.format(v) for v in a[:e].tolist()] + [" ..."] + [fmt.format(v) for v in a[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = ([_nested_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_nested_str(a[i], indent + 1, summarize, fmt) for i in range(len(a) - e, len(a))])
    else:
        slices = [_nested_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def array_str(a: np.ndarray, indent: int) -> str:
    """The bracketed contents of a tensor whose values are ``a`` (a host NumPy array)."""
    if a.size == 0:
        return "[]"
    if a.dtype.kind not in "biufc" or (a.dtype.kind == "f" and a.dtype.itemsize < 4):
        a = a.astype(np.float64)  # bfloat16 (ml_dtypes) and float16 print their exact values
    summarize = a.size > PRINT_OPTS.threshold
    shown = _summarized(a) if summarize else a
    fmt = _ComplexFormatter(shown) if a.dtype.kind == "c" else _Formatter(shown)
    return _nested_str(a, indent, summarize, fmt)


def _add_suffixes(body: str, suffixes: list[str], indent: int, force_newline: bool = False) -> str:
    """Append ``suffixes`` after ``body``; ``force_newline`` starts the first on a new line
    (PyTorch does for sparse tensors)."""
    parts = [body]
    last_line_len = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if force_newline or last_line_len + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
            force_newline = False
        else:
            parts.append(", " + s)
            last_line_len += len(s) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, default_dtype, no_suffix_dtypes) -> str:
    """``repr(t)`` for a Tensor ``t`` in PyTorch's format. ``default_dtype`` is the current
    default float dtype; ``no_suffix_dtypes`` the dtypes (besides it) printed without
    ``dtype=`` (int64, bool)."""
    prefix = "tensor("
    indent = len(prefix)
    d = t.dtype
    if t.device.type == "meta":  # no values to print: PyTorch's form
        suffixes = ["device='meta'", f"size={tuple(t.shape)}"]
        if d != default_dtype:  # no values to tell an int64 from: always named
            suffixes.append(f"dtype={d}")
        if t.grad_fn is not None:
            suffixes.append(f"grad_fn=<{_node_name(t.grad_fn)}>")
        elif t.requires_grad:
            suffixes.append("requires_grad=True")
        return _add_suffixes(prefix + "...", suffixes, indent)
    a = t.numpy()
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
        if d != default_dtype:
            suffixes.append(f"dtype={d}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(a.shape)}")
        if d != default_dtype and d not in no_suffix_dtypes:
            suffixes.append(f"dtype={d}")
        body = array_str(a, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{_node_name(t.grad_fn)}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


def _node_name(fn) -> str:
    """The name torch's repr shows for a grad_fn: its type's (``NotImplemented`` for the node
    whose ``name()`` is ``'torch::autograd::NotImplemented'``)."""
    return fn.name().rsplit("::", 1)[-1]
