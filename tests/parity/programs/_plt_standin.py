"""A recording stand-in for ``matplotlib.pyplot`` (and the ``matplotlib.cm`` /
``mpl_toolkits.mplot3d`` names the beginner tutorials import), for the parity tests.

The old tutorials plot as they train (``plt.ion()``, ``plt.pause(0.1)`` every few steps, a
blocking ``plt.show()``): with the real library that is a GUI window or, on Agg, a sleep per
pause. The stand-in instead records every call -- its name, its arguments (NumPy arrays
copied as float64) -- so that the test compares what each run *plotted* (the predictions, the
``'Loss=%.4f'`` texts) as it compares what each printed. ``matplotlib_modules(calls)`` gives
the ``sys.modules`` entries for ``run_script(..., modules=...)``; ``plot_lines`` turns the
recorded calls into printable lines and their arrays.
"""

from __future__ import annotations

import types

import numpy as np


class _Recorder:
    """A figure / axes / pyplot: every attribute is a method that records its call and
    returns another recorder (``plt.figure(1).add_subplot(...)`` chains)."""

    def __init__(self, calls: list, prefix: str):
        self._calls, self._prefix = calls, prefix

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args, **kwargs):
            return self._record(name, args, kwargs)

        return call

    def _record(self, name, args, kwargs):
        self._calls.append((f"{self._prefix}{name}", [_plain(a) for a in args],
                            {k: _plain(v) for k, v in sorted(kwargs.items())}))
        return _Recorder(self._calls, "ax.")

    def subplots(self, nrows=1, ncols=1, **kwargs):
        self._record("subplots", (nrows, ncols), kwargs)
        axes = np.empty((nrows, ncols), object)
        for i in range(nrows):
            for j in range(ncols):
                axes[i, j] = _Recorder(self._calls, f"ax[{i},{j}].")
        return _Recorder(self._calls, "fig."), axes.squeeze()[()] if axes.size == 1 else axes.squeeze()


def _plain(value):
    """A call argument as recorded: arrays (and array-likes of numbers) as float64 copies,
    everything else as it is. A framework's tensor here is a test failure: the tutorials
    pass NumPy (``.data.numpy()``), and a tensor would compare by identity."""
    if type(value).__name__ == "Tensor":
        raise TypeError(f"a {type(value).__module__} Tensor reached matplotlib: {value!r}")
    if isinstance(value, np.ndarray | np.generic):
        return np.array(value, np.float64) if value.dtype.kind in "biuf" else value
    if isinstance(value, list | tuple) and value and all(isinstance(v, np.ndarray | np.generic) for v in value):
        return np.array([np.asarray(v, np.float64) for v in value])
    return value


def _rainbow(x):
    """``cm.rainbow(i)``: a fixed RGBA tuple per integer (what it is does not matter here)."""
    return (int(x) / 255.0, 0.5, 1.0 - int(x) / 255.0, 1.0)


def matplotlib_modules(calls: list) -> dict:
    """``sys.modules`` entries for ``matplotlib``, ``matplotlib.pyplot``, ``matplotlib.cm``
    and ``mpl_toolkits.mplot3d`` that record every pyplot call into ``calls``."""
    pyplot = _Recorder(calls, "plt.")
    cm = types.SimpleNamespace(rainbow=_rainbow)
    matplotlib = types.ModuleType("matplotlib")
    matplotlib.__path__ = []
    matplotlib.pyplot, matplotlib.cm = pyplot, cm
    mplot3d = types.ModuleType("mpl_toolkits.mplot3d")
    mplot3d.Axes3D = lambda fig, *a, **k: _Recorder(calls, "ax3d.")
    toolkits = types.ModuleType("mpl_toolkits")
    toolkits.__path__ = []
    toolkits.mplot3d = mplot3d
    return {"matplotlib": matplotlib, "matplotlib.pyplot": pyplot, "matplotlib.cm": cm,
            "mpl_toolkits": toolkits, "mpl_toolkits.mplot3d": mplot3d}


def plot_lines(calls: list) -> tuple[list, list]:
    """``(lines, arrays)``: each recorded call as a line of text, its array arguments
    replaced by ``<array shape>``, and per line the list of those arrays, in order."""
    lines, arrays = [], []
    for name, args, kwargs in calls:
        mine = []

        def show(value, _mine=mine):
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                _mine.append(value)
                return f"<array {value.shape}>"
            return repr(value)

        shown = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
        lines.append(f"{name}({', '.join(shown)})")
        arrays.append(mine)
    return lines, arrays
