"""A source check on the Numba kernels: no ``/`` in an innermost loop.

numba compiles every ``/`` with a zero-divisor test that raises ZeroDivisionError (its
default, Python error model), and that branch keeps LLVM from vectorising the loop around
it. ``np.divide`` gives the same IEEE quotient without the test. The AdamW update had two
``/`` per element: 4.1 ns per float32 element against 1.3 with ``np.divide``
(docs/BENCH.md, "Session 39 (perf-eager)"). A division per row, outside the loop over the
row's elements, costs nothing and is allowed."""

import ast
import pathlib

import shardflow.kernels as kernels_pkg

KERNEL_DIR = pathlib.Path(kernels_pkg.__file__).parent


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name) and target.id in ("kernel", "helper"):
            return True
    return False


def _innermost_loops(node):
    for sub in ast.walk(node):
        if isinstance(sub, (ast.For, ast.While)):
            if not any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(sub) if n is not sub):
                yield sub


def _divisions_in_innermost_loops(source: str) -> list[str]:
    found = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, ast.FunctionDef) and _is_kernel(fn):
            for loop in _innermost_loops(fn):
                for n in ast.walk(loop):
                    if isinstance(n, (ast.BinOp, ast.AugAssign)) and isinstance(n.op, ast.Div):
                        found.append(f"{fn.name}: line {n.lineno}")
    return found


def test_the_check_finds_a_division_in_a_loop():
    src = "@kernel\ndef k(x, y):\n    for i in prange(x.size):\n        x[i] = x[i] / y[i]\n"
    assert _divisions_in_innermost_loops(src) == ["k: line 4"]
    per_row = ("@kernel\ndef k(x, s):\n    for i in prange(x.shape[0]):\n        inv = 1.0 / s[i]\n"
               "        for j in range(x.shape[1]):\n            x[i, j] *= inv\n")
    assert _divisions_in_innermost_loops(per_row) == []


def test_no_kernel_divides_with_slash_per_element():
    bad = {p.name: d for p in sorted(KERNEL_DIR.glob("*.py"))
           if (d := _divisions_in_innermost_loops(p.read_text()))}
    assert not bad, f"use np.divide in these kernels' innermost loops: {bad}"
