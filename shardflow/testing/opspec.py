"""One table of op specs drives the op tests: forward and backward against PyTorch, and a
float64 finite-difference check (``tests/ops/test_op_reference.py``).

An ``OpSpec`` names a function ``fn(lib, *inputs)`` written once and run with ``lib`` set to
``shardflow`` and to ``torch``; inputs are ``Arg``s (random arrays made from a seed) or
plain Python values passed through. ``dtypes`` is the spec's dtype axis: the torch comparison
runs once per dtype with the floating inputs cast to it (``tests/ops/test_op_reference.py``
sets the tolerances per dtype; ``dtype_tol`` overrides them for one spec, with the reason in
``notes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Arg:
    """A random input. kind: normal | uniform | positive | int | bool | index | nonzero.

    ``index`` draws integers in [0, high); ``int`` in [low, high). ``grad`` marks inputs that
    require gradient (only floating kinds).
    """

    shape: tuple
    kind: str = "normal"
    dtype: str = "float32"
    low: float = -1.0
    high: float = 1.0
    grad: bool = True
    distinct: bool = False  # values far apart (for max/sort/median so ties don't occur)

    def make(self, rng: np.random.Generator, float_dtype: str | None = None) -> np.ndarray:
        dt = float_dtype if (float_dtype and self.kind in ("normal", "uniform", "positive", "nonzero")) else self.dtype
        if self.distinct:
            n = int(np.prod(self.shape)) if self.shape else 1
            vals = rng.permutation(n).astype(np.float64) * 0.1 - 0.05 * n
            return vals.reshape(self.shape).astype(dt)
        if self.kind == "normal":
            return rng.standard_normal(self.shape).astype(dt)
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high, self.shape).astype(dt)
        if self.kind == "positive":
            return rng.uniform(0.5, 2.0, self.shape).astype(dt)
        if self.kind == "nonzero":
            x = rng.uniform(0.5, 2.0, self.shape) * rng.choice([-1, 1], self.shape)
            return x.astype(dt)
        if self.kind in ("int", "index"):
            low = 0 if self.kind == "index" else int(self.low)
            return rng.integers(low, int(self.high), self.shape).astype(self.dtype if self.dtype != "float32" else "int64")
        if self.kind == "bool":
            return rng.random(self.shape) < 0.5
        raise ValueError(f"unknown Arg kind {self.kind!r}")

    FLOAT_KINDS = ("normal", "uniform", "positive", "nonzero")

    @property
    def differentiable(self) -> bool:
        return self.grad and self.kind in self.FLOAT_KINDS


@dataclass
class OpSpec:
    name: str
    fn: Callable
    inputs: list[Any]
    atol: float = 1e-5
    rtol: float = 1e-4
    grad: bool = True  # compare backward against PyTorch
    fd: bool = True  # float64 finite-difference check
    fd_atol: float = 1e-5
    fd_rtol: float = 1e-3
    fd_elements: int | None = None  # check only this many elements per input (large inputs)
    # dtypes the torch comparison runs in (floating inputs cast to each); drop one only for a
    # stated reason in ``notes`` (e.g. torch has no bfloat16 kernel for the op on CPU)
    dtypes: tuple = ("float32", "float64", "bfloat16")
    dtype_tol: dict = field(default_factory=dict)  # {"float64": (atol, rtol)}: a stated exception
    seed: int = 0
    notes: str = ""
    skip_torch: bool = False
    extra: dict = field(default_factory=dict)

    def __repr__(self):
        return f"OpSpec({self.name})"

    def make_inputs(self, float_dtype: str | None = None):
        rng = np.random.default_rng(self.seed)
        return [a.make(rng, float_dtype) if isinstance(a, Arg) else a for a in self.inputs]
