"""Operator schemas: ``FunctionSchema`` parsed from torch's schema strings, and ``infer_schema``.

A schema is what ``Library.define("crop(Tensor pic, SymInt[] box) -> Tensor")`` declares and
what ``custom_op`` infers from a function's type annotations; calls of the operator are bound
against it (argument count, names, defaults, keyword-only arguments after ``*``), and its
``Tensor(a!)`` annotations name the arguments the operator mutates.

``infer_schema`` gives torch's strings (``int`` is ``SymInt``, ``Sequence[int]`` ``SymInt[]``,
``Optional[T]`` ``T?``, a mutated argument ``Tensor(a<index>!)``) and raises torch's
ValueErrors. The parser reads the subset of the schema language that Python operators use:
types with ``?``/``[]``/``[N]`` suffixes and alias annotations, defaults that are numbers,
``True``/``False``/``None``, strings and lists of numbers, and return lists.
"""

from __future__ import annotations

import collections.abc
import inspect
import re
import typing

from ..autograd import Tensor
from ..backend import device as _device
from ..backend import dtype as _dtype

__all__ = ["Argument", "FunctionSchema", "parse_schema", "infer_schema"]


class Argument:
    """One argument (or return) of a schema: ``name``, ``type`` (torch's type string),
    ``default_value`` (``has_default``), ``kwarg_only``, ``is_write`` (``Tensor(a!)``)."""

    _NO_DEFAULT = object()

    def __init__(self, name, type_, default=_NO_DEFAULT, kwarg_only=False, alias=None):
        self.name = name
        self.type = type_
        self._default = default
        self.kwarg_only = kwarg_only
        self.alias = alias  # "a0!" etc., or None
        self.is_write = bool(alias and alias.endswith("!"))

    @property
    def has_default(self) -> bool:
        return self._default is not Argument._NO_DEFAULT

    @property
    def default_value(self):
        return self._default if self.has_default else None

    @property
    def is_tensor(self) -> bool:
        return self.type in ("Tensor", "Tensor?")

    @property
    def is_tensor_list(self) -> bool:
        return self.type.startswith("Tensor") and self.type.endswith("[]")

    def __str__(self) -> str:
        t = self.type
        if self.alias:
            base = t.rstrip("?[]")
            t = f"{base}({self.alias}){t[len(base):]}"
        s = f"{t} {self.name}" if self.name else t
        if self.has_default:
            s += "=" + _format_default(self._default)
        return s


def _format_default(v) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{int(v)}." if v.is_integer() else repr(v)
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_format_default(x) for x in v) + "]"
    return str(v)


class FunctionSchema:
    """``name(args) -> returns``: what ``OpOverload._schema`` is (``str()`` gives the schema)."""

    def __init__(self, name: str, overload_name: str, arguments: list, returns: list):
        self.name = name
        self.overload_name = overload_name
        self.arguments = arguments
        self.returns = returns

    def __str__(self) -> str:
        pos, kw = [], []
        for a in self.arguments:
            (kw if a.kwarg_only else pos).append(str(a))
        args = pos + (["*"] + kw if kw else [])
        name = self.name + (f".{self.overload_name}" if self.overload_name else "")
        if len(self.returns) == 1 and not self.returns[0].name:
            ret = str(self.returns[0])
        else:
            ret = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{name}({', '.join(args)}) -> {ret}"

    __repr__ = __str__

    def bind(self, args: tuple, kwargs: dict) -> list:
        """The call's values, one per argument in schema order (defaults filled in); raises
        torch's RuntimeErrors for a wrong count, an unknown or a missing argument."""
        n_pos = sum(1 for a in self.arguments if not a.kwarg_only)
        if len(args) > n_pos:
            raise RuntimeError(f"{self.name}() expected at most {n_pos} argument(s) but received "
                               f"{len(args)} argument(s). Declaration: {self}")
        names = {a.name for a in self.arguments}
        for k in kwargs:
            if k not in names:
                raise RuntimeError(f"Unknown keyword argument '{k}' for operator '{self.name}'. Schema: {self}")
        values = []
        for i, a in enumerate(self.arguments):
            if i < len(args):
                if a.name in kwargs:
                    raise RuntimeError(f"Argument '{a.name}' specified both as positional and keyword "
                                       f"argument. Schema: {self}")
                values.append(args[i])
            elif a.name in kwargs:
                values.append(kwargs[a.name])
            elif a.has_default:
                values.append(a.default_value)
            else:
                raise RuntimeError(f"{self.name}() is missing value for argument '{a.name}'. "
                                   f"Declaration: {self}")
        return values


# ------------------------------------------------------------------------------ parsing
_TYPE = re.compile(r"^(?P<base>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<alias>[^)]*)\))?(?P<suffix>(\?|\[\d*\])*)$")


def _split_top(s: str) -> list[str]:
    """Split on commas outside brackets/parentheses/quotes."""
    out, depth, cur, quote = [], 0, [], None
    for ch in s:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _parse_default(text: str, type_: str):
    text = text.strip()
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text[:1] in "\"'":
        return text[1:-1]
    if text.startswith("["):
        return [_parse_default(x, type_.rstrip("[]")) for x in _split_top(text[1:-1])]
    try:
        if type_.startswith("float") or any(c in text for c in ".eE") and not text.startswith("0x"):
            return float(text)
        return int(text)
    except ValueError:
        return text  # an enum-like literal (contiguous_format, Mean): kept as written


def _parse_type(text: str, where: str):
    m = _TYPE.match(text.replace(" ", ""))
    if m is None:
        raise RuntimeError(f"Unknown type {text!r} in schema {where!r}")
    suffix = re.sub(r"\[\d+\]", "[]", m.group("suffix"))
    return m.group("base") + suffix, m.group("alias")


def _parse_arg(text: str, kwarg_only: bool, where: str) -> Argument:
    default = Argument._NO_DEFAULT
    if "=" in text:
        text, dflt = text.split("=", 1)
        default_text = dflt
    else:
        default_text = None
    parts = text.strip().rsplit(" ", 1)
    if len(parts) != 2:
        raise RuntimeError(f"Expected '<type> <name>' for an argument, got {text.strip()!r} in schema {where!r}")
    type_, alias = _parse_type(parts[0], where)
    if default_text is not None:
        default = _parse_default(default_text, type_)
    return Argument(parts[1], type_, default, kwarg_only, alias)


def parse_schema(schema: str) -> FunctionSchema:
    """``"ns::name.overload(Tensor x, *, float a=1.) -> Tensor"`` (the name may be left out:
    ``"(Tensor x) -> Tensor"``, as ``torch.library.define`` takes it)."""
    m = re.match(r"^\s*(?P<name>[\w:.]*)\s*\((?P<args>.*)\)\s*->\s*(?P<ret>.+?)\s*$", schema, re.S)
    if m is None:
        raise RuntimeError(f"Expected a schema '<name>(<arguments>) -> <returns>', got {schema!r}")
    full = m.group("name")
    name, _, overload = full.partition(".")
    arguments, kwarg_only = [], False
    for piece in _split_top(m.group("args")):
        if piece == "*":
            kwarg_only = True
            continue
        arguments.append(_parse_arg(piece, kwarg_only, schema))
    ret = m.group("ret").strip()
    if ret.startswith("(") and ret.endswith(")"):
        items = _split_top(ret[1:-1])
    else:
        items = [ret]
    returns = []
    for item in items:
        parts = item.rsplit(" ", 1)
        if len(parts) == 2 and not parts[1].startswith(("(", "[")) and "(" not in parts[1]:
            type_, alias = _parse_type(parts[0], schema)
            returns.append(Argument(parts[1], type_, alias=alias))
        else:
            type_, alias = _parse_type(item, schema)
            returns.append(Argument("", type_, alias=alias))
    return FunctionSchema(name, overload, arguments, returns)


# ------------------------------------------------------------------------------ inference
def _optional_of(ann):
    """T for Optional[T] / T | None, else None."""
    args = typing.get_args(ann)
    if args and type(None) in args and len(args) == 2 and (
            typing.get_origin(ann) is typing.Union or type(ann).__name__ == "UnionType"):
        return next(a for a in args if a is not type(None))
    return None


def _sequence_of(ann):
    """T for Sequence[T] / List[T] / list[T], else None."""
    origin = typing.get_origin(ann)
    if origin in (list, collections.abc.Sequence) and len(typing.get_args(ann)) == 1:
        return typing.get_args(ann)[0]
    return None


def _is_number(ann) -> bool:
    args = set(typing.get_args(ann))
    return args == {int, float, bool} or args == {int, float, bool, complex}


_SCALARS = {int: "SymInt", float: "float", bool: "bool", str: "str"}


def _arg_type(ann) -> str | None:
    if ann is Tensor:
        return "Tensor"
    if ann in _SCALARS:
        return _SCALARS[ann]
    if ann is _dtype:
        return "ScalarType"
    if ann is _device:
        return "Device"
    if _is_number(ann):
        return "Scalar"
    inner = _optional_of(ann)
    if inner is not None:
        t = _arg_type(inner)
        return None if t is None or t.endswith("?") else t + "?"
    inner = _sequence_of(ann)
    if inner is not None:
        if inner is Tensor:
            return "Tensor[]"
        if _optional_of(inner) is Tensor:
            return "Tensor?[]"
        if inner in (int, float, bool):
            return _SCALARS[inner] + "[]"
    return None


def _return_type(ann) -> str | None:
    if ann is Tensor:
        return "Tensor"
    if ann in (int, float, bool):
        return _SCALARS[ann]
    if _is_number(ann):
        return "Scalar"
    if _sequence_of(ann) is Tensor and typing.get_origin(ann) is list:
        return "Tensor[]"
    return None


def _format_default_infer(v) -> str:
    if isinstance(v, float):
        return repr(v)
    return _format_default(v)


def infer_schema(prototype_function, /, *, mutates_args, op_name: str | None = None) -> str:
    """torch.library.infer_schema: the schema string of a type-annotated function
    (``"(Tensor x, SymInt[] box) -> Tensor"``; with ``op_name`` it starts with the name).
    ``mutates_args``: the names of the arguments the function mutates, or ``"unknown"``
    (every Tensor argument then counts as mutated)."""
    sig = inspect.signature(prototype_function)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    try:
        hints = typing.get_type_hints(prototype_function)
    except Exception:  # annotations that do not evaluate: use them as written
        hints = {k: p.annotation for k, p in sig.parameters.items()}
        hints["return"] = sig.return_annotation
    params, seen_kw = [], False
    for idx, (name, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if p.kind == p.KEYWORD_ONLY and not seen_kw:
            params.append("*")
            seen_kw = True
        if p.annotation is inspect.Parameter.empty:
            error(f"Parameter {name} must have a type annotation.")
        type_ = _arg_type(hints.get(name, p.annotation))
        if type_ is None:
            error(f"Parameter {name} has unsupported type {p.annotation}. The valid types are: "
                  "Tensor, Optional[Tensor], Sequence[Tensor], Sequence[Optional[Tensor]], int, "
                  "float, bool, str, Sequence[int|float|bool], Optional[...] of those, "
                  "torch.types.Number, torch.dtype, torch.device.")
        if mutates_args == "unknown" and type_.startswith("Tensor"):
            text = f"Tensor(a{idx}!){type_[len('Tensor'):]} {name}"
        elif mutates_args != "unknown" and name in mutates_args:
            if not type_.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of "
                      "Tensors can be mutated")
            text = f"Tensor(a{idx}!){type_[len('Tensor'):]} {name}"
        else:
            text = f"{type_} {name}"
        if p.default is not inspect.Parameter.empty:
            if p.default is not None and not isinstance(p.default, (int, float, bool, str)):
                error(f"Parameter {name} has an unsupported default value type {type(p.default)}.")
            text += "=" + _format_default_infer(p.default)
        params.append(text)
    if mutates_args != "unknown":
        unknown = set(mutates_args) - set(sig.parameters)
        if unknown:
            error(f"{unknown} in mutates_args were not found in the custom op's signature. "
                  "mutates_args should contain the names of all args that the custom op mutates, "
                  "or just the string 'unknown' if you don't know.")
    ret_ann = hints.get("return", sig.return_annotation)
    if ret_ann is inspect.Parameter.empty:
        error("No return type annotation was provided. Please add one.")
    if ret_ann is None or ret_ann is type(None):
        ret = "()"
    elif typing.get_origin(ret_ann) is tuple:
        items = [_return_type(a) for a in typing.get_args(ret_ann)]
        if None in items:
            error(f"Return has unsupported type {ret_ann}.")
        ret = "(" + ", ".join(items) + ")"
    else:
        ret = _return_type(ret_ann)
        if ret is None:
            error(f"Return has unsupported type {ret_ann}. The valid types are: Tensor, "
                  "list[Tensor], int, float, bool, torch.types.Number, and tuples of them.")
    return f"{op_name or ''}({', '.join(params)}) -> {ret}"
