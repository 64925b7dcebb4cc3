"""Keyword-argument parity audit: the keywords torch 2.13 takes that shardflow does not.

A PyTorch program that passes a keyword shardflow's function lacks fails with a TypeError
(or, where shardflow takes ``**kwargs`` and drops them, silently computes something else).
This script finds those gaps by comparing parameter names, name by name:

* top-level ``torch.*`` functions, ``torch.Tensor`` methods, ``torch.nn.functional.*``,
  ``torch.linalg/fft/special.*``;
* ``__init__`` of every ``torch.nn`` Module class, ``torch.optim`` optimizer and
  ``torch.optim.lr_scheduler`` class.

torch's builtins have no ``inspect.signature``: their parameters come from the signature
line(s) of ``__doc__`` (``add(input, other, *, alpha=1, out=None) -> Tensor``; overloads are
several lines, also as ``.. function::`` / ``.. method::`` directives), and the union of the
overloads' names is what torch accepts. Python-level torch functions use
``inspect.signature`` unless it is only ``(*args, **kwargs)`` (then the doc line).

Not reported: ``out`` (the dispatcher gives every registered op torch's ``out=``), ``self``,
``*args`` / ``**kwargs`` of torch, and the first parameter of a function when only its name
differs (``input`` vs ``A``: a tensor passed positionally by every program; listed apart as
``first-arg``). A keyword shardflow does not name but its ``**kwargs`` takes is listed under
``via-kwargs``: what that ``**kwargs`` does with it must be checked by hand (``--kwargs``
lists every audited shardflow callable with a ``**kwargs``).

Usage::

    python scripts/signature_gaps.py            # every gap, one line per name
    python scripts/signature_gaps.py --kwargs   # also the shardflow callables with **kwargs
    python scripts/signature_gaps.py --json     # machine-readable

``tests/test_signature_parity.py`` imports :func:`gaps_for` and asserts a core list of
names has no gap left.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path

IGNORED = frozenset({"out", "self"})

# Names in torch's doc lines that torch 2.13 itself refuses as keywords (doc drift; each
# checked by calling torch with it: "unexpected keyword argument" or "missing ... positional
# argument" naming the real parameter). Not gaps.
DOC_DRIFT = {
    "Tensor.bmm": {"batch2"}, "Tensor.dot": {"other"}, "Tensor.fmod": {"divisor"},
    "Tensor.remainder": {"divisor"}, "Tensor.frexp": {"input"}, "Tensor.histogram": {"input"},
    "Tensor.index_copy": {"tensor2"}, "Tensor.masked_scatter": {"tensor"},
    "Tensor.narrow": {"dimension"}, "Tensor.narrow_copy": {"dimension"}, "Tensor.put": {"input"},
    "Tensor.take": {"indices"}, "Tensor.true_divide": {"value"}, "Tensor.div": {"value"},
    "Tensor.divide": {"value"}, "Tensor.mul": {"value"}, "Tensor.multiply": {"value"},
    "Tensor.floor_divide": {"value"}, "Tensor.matmul": {"tensor2"}, "Tensor.type_as": {"tensor"},
    "Tensor.where": {"condition", "y"}, "Tensor.to_sparse": {"sparseDims"},
    "Tensor.dsplit": {"split_size_or_sections"}, "Tensor.hsplit": {"split_size_or_sections"},
    "Tensor.vsplit": {"split_size_or_sections"}, "Tensor.broadcast_to": {"shape"},
    "torch.broadcast_to": {"shape"}, "torch.searchsorted": {"values"},
    "torch.true_divide": {"divisor"}, "torch.unsafe_split": {"split_size_or_sections"},
    "torch.hsplit": {"indices_or_sections"}, "torch.vsplit": {"indices_or_sections"},
    "torch.dsplit": {"indices_or_sections"}, "torch.tensor": {"3"},
    "torch.linalg.lu_factor": {"bool"}, "Tensor.mul_": {"value"}, "Tensor.div_": {"value"},
    "Tensor.fmod_": {"divisor"}, "Tensor.remainder_": {"divisor"}, "Tensor.floor_divide_": {"value"},
    "Tensor.index_copy_": {"tensor"}, "Tensor.resize_as_": {"tensor"}, "Tensor.atanh_": {"other"},
    "Tensor.arctanh_": {"other"}, "Tensor.multiply_": {"value"}, "Tensor.true_divide_": {"value"},
    "Tensor.divide_": {"value"}, "Tensor.to": {"other"},  # torch's name is tensor=
    # from torch.overrides.get_testing_overrides() (undocumented builtins), refused by torch too
    "torch.aminmax": {"min", "max"}, "torch.histogramdd": {"hist", "bin_edges"},
    "torch.hamming_window": {"float"}, "Tensor.relu_": {"inplace"}, "torch.sym_sum": {"args"},
    "torch.nuclear_norm": {"p", "dtype"}, "torch.triangular_solve": {"cloned_coefficient"},
    "Tensor.index_reduce": {"include_input"}, "torch.split_with_sizes": {"split_size_or_sections"},
    "Tensor.split_with_sizes": {"split_size_or_sections"},
    "torch.unsafe_split_with_sizes": {"split_size_or_sections"},
    "Tensor.unsafe_split_with_sizes": {"split_size_or_sections"},
    **{f"torch.{n}": {"size_average", "reduce"} for n in (
        "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss")},
    **{f"torch.{n}": {"values", "indices"}
       for n in ("kthvalue", "max", "min", "median", "nanmedian", "topk", "sort", "cummax", "cummin",
                 "mode")},
}

# shardflow callables whose ``**kwargs`` were read by hand: the keywords each takes by name
# from them (the rest raise TypeError). A torch keyword in this set is not a gap.
KWARGS_AUDITED = {
    "Tensor.to": {"copy", "device", "dtype", "memory_format", "non_blocking", "tensor"},
}

# Gaps left on purpose (docs/COMPAT.md "Keyword arguments" says why); the parity test
# fails on any gap outside this table, anywhere in the audit.
KNOWN_LEFT = {
    # ATen-level entry points programs reach through nn.functional, whose keywords match
    "torch.dropout": {"train"}, "torch.alpha_dropout": {"train"}, "torch.feature_alpha_dropout": {"train"},
    "torch.batch_norm": {"cudnn_enabled"}, "torch.layer_norm": {"cudnn_enabled"},
    "torch.group_norm": {"cudnn_enabled"}, "torch.instance_norm": {"cudnn_enabled"},
    "torch.compile": {"name", "shapes_spec", "recompile_limit", "isolate_recompiles"},  # tuning
    "torch.spmm": {"out_dtype"},
    # rare keyword spellings of positional arguments; `from` is a Python keyword
    "Tensor.cholesky_solve": {"input2"}, "Tensor.orgqr": {"input2"}, "Tensor.ormqr": {"input2", "input3"},
    "Tensor.polygamma": {"n"}, "Tensor.heaviside_": {"values"}, "Tensor.random_": {"from", "to"},
    "Tensor.uniform_": {"from", "to"},
    "Tensor.lstsq": {"other"}, "Tensor.solve": {"other"},  # removed: they raise torch's message
}

# NumPy spellings torch's argument parser takes for its own names (python_arg_parser.cpp);
# a registered shardflow op takes them too (autograd/numpy_kwargs.py).
NUMPY_ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input",
                 "x2": "other"}

_SIG_LINE = r"^\s*(?:\.\.\s+(?:function|method)::\s+)?(?:[\w.]+\.)?{name}\((.*?)\)\s*(?:->.*)?$"


def _split_params(text: str) -> list[str]:
    """Split a parameter list at top-level commas (brackets, parentheses, quotes nest)."""
    parts, depth, cur, quote = [], 0, [], None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def doc_params(doc: str | None, name: str) -> list[list[str]] | None:
    """Each overload's parameter names from the signature lines of ``doc`` (None: no line).

    ``*size``/``*args``/``**kwargs`` and the bare ``*`` are dropped: they name no keyword.
    """
    if not doc:
        return None
    pat = re.compile(_SIG_LINE.format(name=re.escape(name)))
    overloads = []
    lines, cur = [], ""
    for line in doc.splitlines():  # a signature may wrap: join lines until its parentheses close
        cur = f"{cur} {line.strip()}" if cur else line
        if cur.count("(") <= cur.count(")"):
            lines.append(cur)
            cur = ""
    for line in lines:
        m = pat.match(line)
        if not m:
            continue
        names = []
        for p in _split_params(m.group(1)):
            if p.startswith("*") or p in ("/", ""):
                continue
            m2 = re.match(r"(\w+)", p)
            if m2:
                names.append(m2.group(1))
        overloads.append(names)
    return overloads or None


def torch_params(obj, name: str, method: bool = False) -> list[list[str]] | None:
    """torch's overloads' parameter names for ``obj`` (``self`` dropped for methods)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        ps = list(sig.parameters.values())
        named = [p for p in ps if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if named or not ps:
            names = [p.name for p in named if p.kind != p.POSITIONAL_ONLY]
            if method and names and names[0] == "self":
                names = names[1:]
            return [names]
    found = doc_params(getattr(obj, "__doc__", None), name)
    if found is None:  # an undocumented builtin (torch.relu): torch's own testing signature
        found = _override_params(obj, method)
    return found


def _override_params(obj, method):
    """Parameter names of ``torch.overrides.get_testing_overrides()``'s stand-in for ``obj``
    (a lambda with torch's names), or None."""
    import torch

    global _OVERRIDES
    if _OVERRIDES is None:
        _OVERRIDES = torch.overrides.get_testing_overrides()
    f = _OVERRIDES.get(obj)
    if f is None:
        return None
    names = [p.name for p in inspect.signature(f).parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return [names[1:] if method and names else names]


_OVERRIDES = None


def shardflow_params(obj, method: bool = False):
    """(keyword names shardflow's ``obj`` accepts, first parameter's name, has ``**kwargs``)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    ps = list(sig.parameters.values())
    if method and ps and ps[0].kind != ps[0].VAR_POSITIONAL:
        ps = ps[1:]  # self (or a registered op's ``input``)
    names = [p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    first = ps[0].name if ps and ps[0].kind in (ps[0].POSITIONAL_ONLY, ps[0].POSITIONAL_OR_KEYWORD) else None
    varkw = any(p.kind == p.VAR_KEYWORD for p in ps)
    return set(names), first, varkw


def compare(t_obj, s_obj, name: str, method: bool = False, init: bool = False,
            qualname: str | None = None) -> dict | None:
    """The gap record for one name, or None when torch's parameters cannot be read.

    ``init``: compare ``__init__`` (drops ``self`` on both sides). ``qualname`` (``Tensor.div``)
    looks up :data:`DOC_DRIFT`.
    """
    if init:
        t_obj, s_obj, method = t_obj.__init__, s_obj.__init__, True
    overloads = torch_params(t_obj, name, method=method)
    sf = shardflow_params(s_obj, method=method)
    if overloads is None or sf is None:
        return None
    s_names, s_first, varkw = sf
    t_first = {o[0] for o in overloads if o}
    wanted = {n for o in overloads for n in o} - IGNORED - DOC_DRIFT.get(qualname or name, set())
    missing = wanted - s_names
    if hasattr(s_obj, "op_name"):  # a registered op: the routed form renames NumPy's spellings
        missing = {n for n in missing if NUMPY_ALIASES.get(n) not in s_names}
    first_arg = set()
    if not method and s_first is not None:
        first_arg = {n for n in missing if n in t_first and s_first not in wanted}
        missing -= first_arg
    rec = {"missing": [], "via_kwargs": [], "first_arg": sorted(first_arg), "varkw": varkw}
    if varkw:
        missing -= KWARGS_AUDITED.get(qualname or name, set())
    rec["via_kwargs" if varkw else "missing"] = sorted(missing)
    return rec


def _public_functions(t_mod, s_mod):
    for n in sorted(dir(t_mod)):
        if n.startswith("_"):
            continue
        t_obj = getattr(t_mod, n, None)
        if not callable(t_obj) or inspect.isclass(t_obj) or inspect.ismodule(t_obj):
            continue
        s_obj = getattr(s_mod, n, None)
        if s_obj is None or inspect.isclass(s_obj) or not callable(s_obj):
            continue
        yield n, t_obj, s_obj


def _classes(t_mod, s_mod, base_t):
    for n in sorted(dir(t_mod)):
        if n.startswith("_"):
            continue
        t_obj = getattr(t_mod, n, None)
        if not (inspect.isclass(t_obj) and issubclass(t_obj, base_t)) or t_obj is base_t:
            continue
        s_obj = getattr(s_mod, n, None)
        if inspect.isclass(s_obj) and "__init__" in _own_init_chain(s_obj):
            yield n, t_obj, s_obj


def _own_init_chain(cls):
    return {"__init__"} if any("__init__" in vars(c) for c in cls.__mro__[:-1]) else set()


def families():
    """(family, qualified name, torch object, shardflow object, kind) for every audited name."""
    import torch
    import torch.nn.functional as tF

    import shardflow
    import shardflow.nn.functional as sF

    mods = [("torch", torch, shardflow), ("F", tF, sF)]
    for sub in ("linalg", "fft", "special"):
        mods.append((f"torch.{sub}", getattr(torch, sub), getattr(shardflow, sub)))
    for fam, tm, sm in mods:
        for n, t, s in _public_functions(tm, sm):
            yield fam, f"{fam}.{n}", t, s, "function"
    for n in sorted(dir(torch.Tensor)):
        if n.startswith("_") or not hasattr(shardflow.Tensor, n):
            continue
        t, s = getattr(torch.Tensor, n), getattr(shardflow.Tensor, n)
        if callable(t) and callable(s) and not isinstance(inspect.getattr_static(torch.Tensor, n), property):
            yield "Tensor", f"Tensor.{n}", t, s, "method"
    import torch.optim.lr_scheduler as tsched

    import shardflow.optim.lr_scheduler as ssched
    for fam, tm, sm, base in (("nn", torch.nn, shardflow.nn, torch.nn.Module),
                              ("optim", torch.optim, shardflow.optim, torch.optim.Optimizer),
                              ("lr_scheduler", tsched, ssched, tsched.LRScheduler)):
        for n, t, s in _classes(tm, sm, base):
            yield fam, f"{fam}.{n}", t, s, "init"


def gaps_for(names: set[str] | None = None) -> dict[str, dict]:
    """Gap records keyed by qualified name (``torch.sum``, ``Tensor.sum``, ``F.relu``,
    ``nn.Linear``, ``optim.Adam``, ``lr_scheduler.StepLR``), for ``names`` or all."""
    out = {}
    for _fam, q, t, s, kind in families():
        if names is not None and q not in names:
            continue
        rec = compare(t, s, q.rsplit(".", 1)[1], method=kind == "method", init=kind == "init", qualname=q)
        if rec is not None:
            out[q] = rec
    return out


def kwargs_callables():
    """(qualified name, how it uses its ``**kwargs``) for every public shardflow callable of the
    audited modules that takes ``**kwargs``: ``forwards`` when its source passes them on as
    ``**name`` (the callee refuses unknown ones), ``pops`` when it takes them off by name
    (check it refuses the rest), else ``check``. A heuristic, read by hand."""
    import shardflow
    import shardflow.nn.functional as sF
    import shardflow.optim.lr_scheduler as ssched

    mods = [("torch", shardflow), ("F", sF), ("nn", shardflow.nn), ("optim", shardflow.optim),
            ("lr_scheduler", ssched)]
    mods += [(f"torch.{m}", getattr(shardflow, m)) for m in ("linalg", "fft", "special")]
    seen = set()
    for fam, mod in mods:
        for n in sorted(dir(mod)):
            obj = getattr(mod, n, None) if not n.startswith("_") else None
            if obj is None or not callable(obj) or inspect.ismodule(obj):
                continue
            yield from _kwargs_use(f"{fam}.{n}", obj.__init__ if inspect.isclass(obj) else obj, seen)
    for n in sorted(dir(shardflow.Tensor)):
        if not n.startswith("_"):
            yield from _kwargs_use(f"Tensor.{n}", inspect.getattr_static(shardflow.Tensor, n), seen)


def _kwargs_use(q, f, seen):
    f = inspect.unwrap(f) if callable(f) else None
    if f is None or id(f) in seen:
        return
    seen.add(id(f))
    try:
        ps = inspect.signature(f).parameters.values()
        src = inspect.getsource(f).split(":\n", 1)[-1]  # the body, not the def line
    except (TypeError, ValueError, OSError):
        return
    var = next((p.name for p in ps if p.kind is p.VAR_KEYWORD), None)
    if var is None:
        return
    if f"**{var})" in src or f"**{var}," in src:
        yield q, "forwards"
    elif f"{var}.pop(" in src or f"{var}.get(" in src or f"{var}[" in src:
        yield q, "pops"
    else:
        yield q, "check"


def unused_parameters():
    """(qualified name, [parameters its body never reads]) for the audited shardflow callables:
    a keyword accepted and never read is a keyword ignored (``ast`` over the source; a
    parameter read only by ``locals()`` or a nested ``exec`` would be listed too)."""
    import ast
    import textwrap

    seen = set()
    for _fam, q, _t, s_obj, kind in families():
        f = s_obj.__init__ if kind == "init" else s_obj
        f = inspect.unwrap(f)
        if id(f) in seen or not inspect.isfunction(f):
            continue
        seen.add(id(f))
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
        except (OSError, TypeError, SyntaxError):
            continue
        fn = tree.body[0]
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = fn.args
        params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
        read = {n.id for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        left = [p for p in params if p not in read and p not in ("self", "cls") and not p.startswith("_")]
        if left:
            yield q, left


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kwargs", action="store_true", help="list shardflow callables with **kwargs")
    ap.add_argument("--unused", action="store_true",
                    help="list audited shardflow parameters their function never reads")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    recs = gaps_for()
    if a.json:
        json.dump(recs, sys.stdout, indent=1, sort_keys=True)
        return 0
    n_gap = 0
    for q, r in recs.items():
        if r["missing"]:
            n_gap += 1
            print(f"{q}: missing {', '.join(r['missing'])}")
        if r["via_kwargs"]:
            print(f"{q}: via-kwargs {', '.join(r['via_kwargs'])}")
        if r["first_arg"]:
            print(f"{q}: first-arg {', '.join(r['first_arg'])}")
    if a.unused:
        for q, left in unused_parameters():
            print(f"{q}: never reads {', '.join(left)}")
    if a.kwargs:
        for q, use in kwargs_callables():
            print(f"{q}: **kwargs {use}")
    print(f"# {len(recs)} names compared, {n_gap} with missing keywords", file=sys.stderr)
    return 0


if __name__ == "__main__":
    # this checkout's shardflow, not an installed one elsewhere
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
