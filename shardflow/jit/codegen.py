"""Code generation for fused elementwise groups: one Numba kernel per group.

A group's values all have one shape ``S``; the kernel works on the 2-D view
``(M, N) = (prod(S[:-1]), S[-1])`` with the rows split across cores (``prange``). Each
operand from outside the group is one of: a tensor of shape ``S`` (read at ``[i, j]``), a
trailing vector of shape ``(S[-1],)`` (a bias, read at ``[j]``), a 0-d tensor (read at
``[0]``), or a Python number (a literal in the source). Every member is one float64 local
per element; the members other nodes read are stored to output arrays. Example, for
``gelu(x @ w + b) * 2`` after the matmul::

    def fused_2(o0, a0, a1):          # o0, a0: (M, N); a1: (N,)
        M, N = o0.shape
        for i in prange(M):
            for j in range(N):
                x0 = float(a0[i, j]); x1 = float(a1[j])
                v0 = x0 + x1
                v1 = 0.5 * v0 * (1.0 + ERF(v0 * 0.7071067811865476))
                v2 = v1 * 2.0
                o0[i, j] = v2

``ERF``/``TANH`` are the vectorisable float32 approximations of ``kernels/_math.py`` for
float32 graphs and libm for float64 ones. Kernels are memoised by source, so a retrace with
new shapes reuses them. Each is written as a small module under ``jit/__pycache__/fused``
(named by its source's hash) and imported, so numba's disk cache keeps its machine code for
later processes like the hand-written kernels' (in memory only when that folder is not
writable); they appear in ``shardflow.kernels.compile_report()``.

Elementwise ops (``ELEMENTWISE``): add/sub (alpha 1), mul, div (true division), neg, exp,
log, sqrt, rsqrt, tanh, sigmoid, relu, gelu (both forms), silu, square, abs, pow with a
number exponent. All operands must be float32 or float64 of the result's dtype.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
from pathlib import Path

import numpy as np

from ..kernels import _math, _numba
from .graph import Node, Ref

_R2 = repr(math.sqrt(0.5))
_C = repr(math.sqrt(2.0 / math.pi))


def _gelu_expr(a, kw):
    if kw.get("approximate", "none") == "tanh":
        return f"GELU_T({a})"  # x sigmoid(2u): no cancellation as 1 + tanh(u) -> 0
    return f"0.5 * {a} * (1.0 + ERF({a} * {_R2}))"


# name -> (number of operands, expression builder(operand names, kwargs) or None if unsupported)
ELEMENTWISE = {
    "add": (2, lambda a, kw: f"({a[0]} + {a[1]})" if kw.get("alpha", 1) == 1 else None),
    "sub": (2, lambda a, kw: f"({a[0]} - {a[1]})" if kw.get("alpha", 1) == 1 else None),
    "mul": (2, lambda a, kw: f"({a[0]} * {a[1]})"),
    "div": (2, lambda a, kw: f"np.divide({a[0]}, {a[1]})" if kw.get("rounding_mode") is None
            else None),
    "neg": (1, lambda a, kw: f"(-{a[0]})"),
    "exp": (1, lambda a, kw: f"math.exp({a[0]})"),
    "log": (1, lambda a, kw: f"math.log({a[0]})"),
    "sqrt": (1, lambda a, kw: f"math.sqrt({a[0]})"),
    "rsqrt": (1, lambda a, kw: f"np.divide(1.0, math.sqrt({a[0]}))"),
    "tanh": (1, lambda a, kw: f"TANH({a[0]})"),
    "sigmoid": (1, lambda a, kw: f"SIGMOID({a[0]})"),
    "relu": (1, lambda a, kw: f"({a[0]} if not {a[0]} <= 0.0 else 0.0)"),
    "gelu": (1, lambda a, kw: _gelu_expr(a[0], kw)),
    "silu": (1, lambda a, kw: f"({a[0]} * SIGMOID({a[0]}))"),
    "square": (1, lambda a, kw: f"({a[0]} * {a[0]})"),
    "abs": (1, lambda a, kw: f"abs({a[0]})"),
    "pow": (2, lambda a, kw: f"({a[0]} ** {a[1]})"),
}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def elementwise_expr(g, i: int) -> str | None:
    """The expression of call node ``i`` with operands named ``{0}``, ``{1}`` ... when it can
    be fused (known op, float operands of its shape / trailing vector / 0-d, or numbers)."""
    n = g.nodes[i]
    spec = ELEMENTWISE.get(n.name)
    meta = g.meta.get(i)
    if spec is None or len(n.args) != spec[0] or meta is None:
        return None
    shape, dtype = meta
    if dtype not in _FLOATS or not shape:
        return None
    for a in n.args:
        if isinstance(a, Ref):
            m = g.meta.get(a.node) if a.item is None else None
            if m is None or m[1] != dtype or m[0] not in (shape, (shape[-1],), ()):
                return None
        elif not _number(a):
            return None
    if n.name == "pow" and not (isinstance(n.args[0], Ref) and _number(n.args[1])):
        return None
    return spec[1]([f"{{{k}}}" for k in range(len(n.args))], n.kwargs)


_KERNELS: dict[str, _numba.Kernel] = {}


def group_ir(g, members):
    """The straight-line code of a group: ``(ext, kinds, items)``. ``ext``: the operands from
    outside the group (Refs, in first-use order), ``kinds[k]``: how ext ``k`` is read
    (``full`` / ``row`` / ``scalar``); ``items``: one ``(op name, operand tokens, kwargs)``
    per member, the tokens ``v<p>`` (member at position ``p``), ``x<k>`` (ext ``k``) or a
    float literal. Locals are named by position, so equal groups give equal source."""
    shape = g.meta[members[0]][0]
    ext: list = []
    kinds: list[str] = []
    items: list = []
    name_of: dict[int, str] = {}
    inside = set(members)
    for pos, m in enumerate(members):
        n = g.nodes[m]
        ops = []
        for a in n.args:
            if isinstance(a, Ref) and a.node in inside:
                ops.append(name_of[a.node])
            elif isinstance(a, Ref):
                if a not in ext:
                    ext.append(a)
                    s = g.meta[a.node][0]
                    kinds.append("full" if s == shape else ("row" if s == (shape[-1],) else "scalar"))
                ops.append(f"x{ext.index(a)}")
            else:
                ops.append(repr(float(a)))
        items.append((n.name, tuple(ops), dict(n.kwargs)))
        name_of[m] = f"v{pos}"
    return ext, kinds, items


LOAD_INDEX = {"full": "[i, j]", "row": "[j]", "scalar": "[0]"}


def make_fused(g, members, outputs) -> Node:
    """The ``fused`` node for ``members`` (node indices), writing ``outputs``."""
    dtype = g.meta[members[0]][1]
    ext, kinds, items = group_ir(g, members)
    body = [f"            v{pos} = RND({elementwise_expr(g, m).format(*items[pos][1])})"
            for pos, m in enumerate(members)]
    loads = [f"            x{k} = float(a{k}{LOAD_INDEX[kind]})" for k, kind in enumerate(kinds)]
    stores = [f"            o{k}[i, j] = v{members.index(m)}" for k, m in enumerate(outputs)]
    params = [f"o{k}" for k in range(len(outputs))] + [f"a{k}" for k in range(len(ext))]
    fname = f"fused_{len(members)}ops"
    src = "\n".join([f"def {fname}({', '.join(params)}):", "    M, N = o0.shape",
                     "    for i in prange(M):", "        for j in range(N):",
                     *loads, *body, *stores])
    shape = g.meta[members[0]][0]
    kern = kernel_for(src, fname, dtype == np.float32, parallel=parallel_for(shape))
    names = ", ".join(g.nodes[m].name for m in members)
    return Node("fused", name=names, target=kern, args=tuple(ext), kwargs={"kinds": tuple(kinds),
                "source": src}, outputs=tuple(outputs))


# Groups with fewer elements than this run a serial build (``prange`` as ``range``): starting
# numba's parallel region costs about 40-50 us per call here (2 vCPUs, workqueue layer), more
# than a (128, 1024) bias + relu pass takes (serial 0.025 ms, parallel 0.074 ms; (2048, 256):
# 0.094 vs 0.168 ms; equal at (2048, 1024)).
SERIAL_BELOW = 1 << 20


def parallel_for(shape) -> bool:
    """Whether a group of ``shape`` runs the parallel build (see ``SERIAL_BELOW``)."""
    size = int(np.prod(shape, dtype=np.int64))
    return size >= SERIAL_BELOW and _numba.num_threads() > 1


def kernel_for(src, fname, f32, parallel=True):
    """The (memoised) Kernel of generated source ``src`` defining ``fname``; ``parallel=False``
    gives the serial build (its own module and disk-cache entry)."""
    key = src + ("|f32" if f32 else "|f64") + ("" if parallel else "|serial")
    kern = _KERNELS.get(key)
    if kern is None:
        kern = _KERNELS[key] = _load_kernel(src, fname, f32, parallel)
    return kern


# Bump when a helper below changes meaning: numba's disk cache of a generated module is keyed
# by that module's text only, so the header carries this tag into the file name's digest.
HELPERS_VERSION = 9

_HELPER_NAMES = ("RND", "TANH", "ERF", "EXPN", "SIGMOID", "GELU_T", "DGELU_T", "DTANH", "DSIGMOID",
                 "TANH_D", "SIGMOID_D", "SILU_D", "GELU_T_D", "GELU_E_D")
_HELPERS32 = ("round32", "tanh32nd", "erf32", "exp_neg", "sigmoid32", "gelu_tanh32", "dgelu_tanh32",
              "dtanh32", "dsigmoid32", "tanh_d32", "sigmoid_d32", "silu_d32", "gelu_tanh_d32",
              "gelu_erf_d32")
_HELPERS64 = ("round64", "_libm_tanh", "_libm_erf", "_libm_exp", "sigmoid64", "gelu_tanh64", "dgelu_tanh64",
              "dtanh64", "dsigmoid64", "tanh_d64", "sigmoid_d64", "silu_d64", "gelu_tanh_d64",
              "gelu_erf_d64")

_HEADER = """# generated by shardflow.compile (jit/codegen.py, helpers v{version}); safe to delete
# {build} build
import math

import numpy as np

from shardflow.jit.codegen import {imports}
from shardflow.kernels._numba import prange


"""


def _load_kernel(src, fname, f32, parallel=True):
    """The Kernel for generated ``src``: written as a module under ``jit/__pycache__/fused``
    (named by the source's hash; numba then caches its machine code on disk like the hand
    written kernels) and imported; compiled in memory when that folder is not writable."""
    helpers = _HELPERS32 if f32 else _HELPERS64
    imports = ", ".join(f"{h} as {n}" for h, n in zip(helpers, _HELPER_NAMES))
    text = _HEADER.format(version=HELPERS_VERSION, imports=imports,
                          build="parallel" if parallel else "serial") + src + "\n"
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    folder = Path(__file__).parent / "__pycache__" / "fused"
    path = folder / f"{fname}_{digest}.py"
    try:
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{path.name}.{os.getpid()}.tmp"
            tmp.write_text(text)
            os.replace(tmp, path)  # atomic: ranks compiling the same group do not clash
        name = f"shardflow_fused_{digest}"
        mod = sys.modules.get(name)
        if mod is None:
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules[name] = mod  # numba's disk cache finds the module's globals by name
        return _numba.Kernel(getattr(mod, fname), parallel=parallel, cache=True)
    except OSError:
        ns = {"math": math, "np": np, "prange": _numba.prange}
        ns.update({n: globals()[h] for h, n in zip(_HELPERS32 if f32 else _HELPERS64,
                                                   _HELPER_NAMES)})
        exec(compile(src, f"<shardflow.compile {fname}>", "exec"), ns)  # noqa: S102 - generated
        fn = ns[fname]
        fn.__module__ = "jit"
        return _numba.Kernel(fn, parallel=parallel, cache=False)


# for the generated modules' imports
tanh32, erf32, exp_neg = _math.tanh32, _math.erf32, _math.exp_neg


@_numba.helper
def round32(v):
    """``v`` rounded to float32 (as a float64 local): each member of a float32 group holds
    what the eager op would have stored, so add/sub/mul/div/relu chains give eager's bits
    (a float64 op on float32 values rounded once equals the float32 op)."""
    return float(np.float32(v))


@_numba.helper
def round64(v):
    return v


@_numba.helper
def _libm_tanh(v):
    return math.tanh(v)


@_numba.helper
def _libm_erf(v):
    return math.erf(v)


@_numba.helper
def _libm_exp(v):
    return math.exp(v)


# Derivatives from the input, without cancellation where the function saturates (eager's
# ``1 - y^2`` and ``y (1 - y)`` lose every digit there): ``tanh' = 4e / (1 + e)^2``,
# ``e = exp(-2|x|)``; ``sigmoid' = e w^2`` (below).
@_numba.helper
def dtanh32(v):
    e = exp_neg(-2.0 * abs(v))
    w = np.divide(1.0, 1.0 + e)
    return 4.0 * e * w * w


@_numba.helper
def dtanh64(v):
    e = math.exp(-2.0 * abs(v))
    w = np.divide(1.0, 1.0 + e)
    return 4.0 * e * w * w


@_numba.helper
def dsigmoid32(v):
    e = exp_neg(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    return e * w * w


@_numba.helper
def dsigmoid64(v):
    e = math.exp(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    return e * w * w


# The logistic without cancellation, float64 locals: ``e = exp(-|z|)``, ``w = 1 / (1 + e)``,
# ``sigmoid(z) = w`` (z >= 0) or ``e w`` (z < 0), ``sigmoid' = e w^2``. float32 graphs take
# ``_math.exp_neg`` (relative error 6e-8), float64 ones libm's exp. ``np.divide``: ``/``
# would compile a ZeroDivisionError check that stops LLVM from vectorising a serial loop.
_GA = 0.044715


@_numba.helper
def sigmoid32(v):
    e = exp_neg(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    return w if v >= 0.0 else e * w


@_numba.helper
def sigmoid64(v):
    e = math.exp(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    return w if v >= 0.0 else e * w


# the generated modules import it by this name: the eager kernels' float32 tanh
tanh32nd = _math.tanh32


# tanh GELU as ``kernels/gelu.py`` computes it (float32: ``tanh32``; float64: libm):
# ``y = x/2 (1 + t)``, ``t = tanh(c (x + a x^3))``,
# ``dy/dx = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3 a x^2)``.
_C = math.sqrt(2.0 / math.pi)


@_numba.helper
def gelu_tanh32(v):
    return 0.5 * v * (1.0 + tanh32nd(_C * (v + _GA * v * v * v)))


@_numba.helper
def gelu_tanh64(v):
    return 0.5 * v * (1.0 + math.tanh(_C * (v + _GA * v * v * v)))


@_numba.helper
def dgelu_tanh32(v):
    t = tanh32nd(_C * (v + _GA * v * v * v))
    return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * _C * (1.0 + 3.0 * _GA * v * v)


@_numba.helper
def dgelu_tanh64(v):
    t = math.tanh(_C * (v + _GA * v * v * v))
    return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * _C * (1.0 + 3.0 * _GA * v * v)


# (value, derivative) pairs for the training forward (``fused_function.py`` stores the
# derivative for the backward): one exp / erf per element for both.
@_numba.helper
def tanh_d32(v):
    return tanh32(v), dtanh32(v)


@_numba.helper
def tanh_d64(v):
    return math.tanh(v), dtanh64(v)


@_numba.helper
def sigmoid_d32(v):
    e = exp_neg(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    return (w if v >= 0.0 else e * w), e * w * w


@_numba.helper
def sigmoid_d64(v):
    e = math.exp(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    return (w if v >= 0.0 else e * w), e * w * w


@_numba.helper
def silu_d32(v):
    e = exp_neg(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    s = w if v >= 0.0 else e * w
    return v * s, s + v * (e * w * w)


@_numba.helper
def silu_d64(v):
    e = math.exp(-abs(v))
    w = np.divide(1.0, 1.0 + e)
    s = w if v >= 0.0 else e * w
    return v * s, s + v * (e * w * w)


@_numba.helper
def gelu_tanh_d32(v):
    t = tanh32nd(_C * (v + _GA * v * v * v))
    d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * _C * (1.0 + 3.0 * _GA * v * v)
    return 0.5 * v * (1.0 + t), d


@_numba.helper
def gelu_tanh_d64(v):
    t = math.tanh(_C * (v + _GA * v * v * v))
    d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * _C * (1.0 + 3.0 * _GA * v * v)
    return 0.5 * v * (1.0 + t), d


_R2F = math.sqrt(0.5)
_IPF = 1.0 / math.sqrt(2.0 * math.pi)


@_numba.helper
def gelu_erf_d32(v):
    c = 0.5 * (1.0 + erf32(v * _R2F))
    return v * c, c + v * _IPF * exp_neg(-0.5 * v * v)


@_numba.helper
def gelu_erf_d64(v):
    c = 0.5 * (1.0 + math.erf(v * _R2F))
    return v * c, c + v * _IPF * math.exp(-0.5 * v * v)
