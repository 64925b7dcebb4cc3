"""``torch.backends.opt_einsum``: torch's switches for ``einsum``'s contraction-path search,
with torch's names, defaults and checks: ``is_available()`` (whether the ``opt_einsum`` package
imports), ``get_opt_einsum()``, ``enabled`` (default: available), ``strategy`` (``"auto"``;
None without the package), ``set_flags`` and ``flags`` (which check what they set with torch's
ValueErrors; a plain assignment ``torch.backends.opt_einsum.strategy = ...`` is not checked,
as in torch 2.13).

shardflow's ``einsum`` always contracts along NumPy's own optimised path (``np.einsum(...,
optimize=True)``: a greedy search, BLAS for the pairwise products), so the switches change no
result and no speed; they are kept so programs that set or read them run.
"""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "get_opt_einsum", "set_flags", "flags", "enabled", "strategy"]

try:
    import opt_einsum as _opt_einsum
except ImportError:
    _opt_einsum = None


def is_available() -> bool:
    return _opt_einsum is not None


def get_opt_einsum():
    """The ``opt_einsum`` package, or None when it is not installed."""
    return _opt_einsum


enabled = is_available()
strategy = "auto" if is_available() else None


def _set_enabled(value: bool) -> None:
    global enabled
    if not is_available() and value:
        raise ValueError(
            f"opt_einsum is not available, so setting `enabled` to {value} will not reap the benefits of "
            "calculating an optimal path for einsum. torch.einsum will fall back to contracting from left to "
            "right. To enable this optimal path calculation, please install opt-einsum.")
    enabled = value


def _set_strategy(value: str) -> None:
    global strategy
    if not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `strategy` to {value} will not be meaningful. torch.einsum "
            "will bypass path calculation and simply contract from left to right. Please install opt_einsum or "
            "unset `strategy`.")
    if not enabled:
        raise ValueError(
            f"opt_einsum is not enabled, so setting a `strategy` to {value} will not be meaningful. torch.einsum "
            "will bypass path calculation and simply contract from left to right. Please set `enabled` to `True` "
            "as well or unset `strategy`.")
    if value not in ("auto", "greedy", "optimal"):
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}")
    strategy = value


def set_flags(_enabled=None, _strategy=None):
    """Set the switches given; returns the previous ``(enabled, strategy)``, as torch's."""
    previous = (enabled, None if not is_available() else strategy)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return previous


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """The switches set inside a ``with`` block and restored after."""
    previous = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*previous)
