"""NumPy's floating-point warnings, silenced for shardflow's ops as PyTorch is silent.

``log(0)``, ``1 / 0``, ``sqrt(-1)``, ``0 * inf``, ``exp(1000)`` give ``-inf`` / ``inf`` /
``nan`` in PyTorch without a word; NumPy prints ``RuntimeWarning: divide by zero encountered
in log``. Two mechanisms, neither on the per-op path:

* ``install_warning_filter()`` (called once, by ``backend/__init__.py``) adds one entry to
  Python's warning filters: ignore a ``RuntimeWarning`` whose message is one of NumPy's
  floating-point messages (``divide by zero`` / ``overflow`` / ``underflow`` / ``invalid
  value encountered in ...``) *and* which is raised from a ``shardflow`` module. NumPy raises
  these warnings from the Python frame that called the ufunc, so every op's own arithmetic
  is covered, while the same warning from the user's NumPy code (or any other library)
  still shows. Cost: nothing on an op that meets no floating-point condition (a filter is
  consulted only when a warning is raised); an op that does (``log`` of zeros every step)
  pays NumPy's warning construction and Python's filter lookup, a few µs per call. The
  alternative, entering NumPy's error state "ignore" in the op dispatch wrapper, cost
  0.16-0.18 µs on every op (a 2.2 µs 16-element multiply: +7-8%), so it is not used there.
* ``enter_quiet()`` / ``exit_quiet(token)``: NumPy's error state "ignore" for a stretch of
  work, at the cost of one ``ContextVar.set`` and ``reset`` (the "ignore" state object is
  built once; ``np.errstate`` rebuilds it on every entry, about 2.4 µs). The backward engine
  runs each whole pass under it (``autograd/engine.py``), which also covers the arithmetic
  NumPy does in its own Python helpers there (``ndarray.sum`` goes through
  ``numpy/_core/_methods.py``, so its warnings are attributed to NumPy, not shardflow).

Forward code that calls NumPy's Python-level helpers (``ndarray.mean``, ``np.einsum``,
``np.round``) enters ``enter_quiet`` itself (``Mean``, ``_einsum``, rounding); ``Sum`` and
global average pooling call ``np.add.reduce`` directly instead of ``ndarray.sum`` (the
same reduction, attributed to the op's module).

Limits: the filter is Python's, so a filter the program adds after importing shardflow
takes precedence (``warnings.simplefilter("error")`` turns these warnings into
exceptions, where PyTorch stays silent), and a ``warnings.catch_warnings`` block that is
open while shardflow is imported drops it on exit (pytest imports test modules inside
one: call ``install_warning_filter()`` again, as ``tests/conftest.py`` does). Reductions
inside other ops' forward over values mixing ``+inf`` and ``-inf`` can still be reported
from NumPy's ``_methods.py``.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["enter_quiet", "exit_quiet", "install_warning_filter", "FP_MESSAGE"]

# NumPy's floating-point error messages ("divide by zero encountered in log", ...)
FP_MESSAGE = r"(divide by zero|overflow|underflow|invalid value) encountered in "

try:  # NumPy >= 2: the error state is a ContextVar holding an opaque "extobj"
    from numpy._core._ufunc_config import _extobj_contextvar as _state
    from numpy._core._ufunc_config import _make_extobj

    _QUIET = _make_extobj(all="ignore")
    _set, exit_quiet = _state.set, _state.reset

    def enter_quiet():
        """Switch NumPy's error state to "ignore"; returns the token for ``exit_quiet``."""
        return _set(_QUIET)

except (ImportError, AttributeError, TypeError):  # pragma: no cover - other NumPy layouts
    def enter_quiet():
        cm = np.errstate(all="ignore")
        cm.__enter__()
        return cm

    def exit_quiet(token) -> None:
        token.__exit__(None, None, None)


_MODULE = r"shardflow(\.|$)"


def install_warning_filter() -> None:
    """Ignore NumPy's floating-point RuntimeWarnings raised from shardflow's modules. Called
    when shardflow is imported; calling it again re-adds the filter where a
    ``warnings.catch_warnings`` block that was open during the import dropped it (pytest
    imports test modules inside one)."""
    for f in warnings.filters:
        if f[0] == "ignore" and f[2] is RuntimeWarning and f[3] is not None and f[3].pattern == _MODULE:
            return
    warnings.filterwarnings("ignore", message=FP_MESSAGE, category=RuntimeWarning, module=_MODULE)
