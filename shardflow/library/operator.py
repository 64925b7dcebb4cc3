"""A ``torch.library`` operator: its definition (``OpDef``: schema, kernels per dispatch key,
fake kernel, autograd formula) and torch's handles on it, ``OpOverloadPacket``
(``torch.ops.ns.name``) and ``OpOverload`` (``torch.ops.ns.name.default``).

How a call is dispatched (torch's dispatcher, reduced to what Python operators use):

1. The arguments are bound to the schema (count, names, defaults; torch's RuntimeErrors).
2. A Tensor on the ``meta`` device: the fake kernel (``register_fake`` / ``"Meta"``) runs.
3. Grad mode on and a Tensor input that requires grad (the autograd step):

   * a ``register_autograd`` formula: the generated Function (``autograd_kernel.py``);
   * an ``"Autograd"`` kernel (``Library.impl(..., "Autograd")``): it runs, and handles
     autograd itself (its ``Function.forward`` calls the operator again under ``no_grad``,
     which reaches the backend kernel);
   * a ``custom_op`` without a formula: a node whose backward raises torch's error;
   * otherwise (a ``Library`` kernel) the kernel runs with grad mode on, so autograd records
     the Tensor ops inside it. torch 2.13 does the same for a ``CompositeImplicitAutograd``
     kernel; for a backend (``"CPU"``) kernel it warns that this fallback is deprecated, and
     so does shardflow, at the call (torch warns at backward).
4. Otherwise the backend kernel for the inputs' device (``"CPU"``/``"CUDA"``), else
   ``CompositeExplicitAutograd``, else ``CompositeImplicitAutograd``; none: torch's
   NotImplementedError ("Could not run 'ns::name' with arguments from the 'CPU' backend").

A ``custom_op``'s kernel runs under ``no_grad`` (torch runs it below autograd); its outputs may
not alias its inputs (torch's RuntimeError), and the arguments it declares mutated get their
version counters bumped (so a saved-for-backward check sees the change).
"""

from __future__ import annotations

import warnings

from ..autograd import Tensor, is_grad_enabled, no_grad
from ..backend.xp import get_array_module
from ..ops import _op_namespace as op_namespace
from .autograd_kernel import autograd_function, flatten_args, no_formula_function

__all__ = ["OpDef", "OpOverload", "OpOverloadPacket", "DISPATCH_KEYS"]

# the dispatch keys Python kernels are registered to, and what the device types map to
DISPATCH_KEYS = ("CPU", "CUDA", "Meta", "Autograd", "AutogradCPU", "AutogradCUDA",
                 "CompositeImplicitAutograd", "CompositeExplicitAutograd")
_DEVICE_KEY = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}


def _tensors(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (x for x in v if isinstance(x, Tensor))


def _shares(a: Tensor, b: Tensor) -> bool:
    """Whether two Tensors' arrays may overlap (NumPy's or CuPy's ``may_share_memory``)."""
    xa, xb = get_array_module(a.array), get_array_module(b.array)
    return xa is xb and bool(xa.may_share_memory(a.array, b.array))


class OpDef:
    """One defined operator ``ns::name`` (module docstring)."""

    def __init__(self, ns: str, name: str, schema, *, custom_op: bool = False):
        self.ns = ns
        self.name = name
        self.schema = schema
        self.custom_op = custom_op
        self.kernels: dict[str, object] = {}
        self.fake = None
        self.autograd_cls = None
        self.vmap = None
        self.packet = OpOverloadPacket(self)
        self._no_formula_cls = None

    @property
    def qualname(self) -> str:
        return f"{self.ns}::{self.name}"

    # -- registration ------------------------------------------------------------------
    def set_autograd(self, backward, setup_context) -> None:
        self.autograd_cls = autograd_function(self, backward, setup_context)

    # -- calling -----------------------------------------------------------------------
    def call(self, args: tuple, kwargs: dict):
        values = self.schema.bind(args, kwargs)
        pos, kwonly = [], {}
        for a, v in zip(self.schema.arguments, values):
            if a.kwarg_only:
                kwonly[a.name] = v
            else:
                pos.append(v)
        tensors = list(_tensors(values))
        if any(t.device.type == "meta" for t in tensors):
            return self._run_fake(tuple(pos), kwonly)
        if is_grad_enabled() and any(t.requires_grad for t in tensors):
            return self._call_autograd(tuple(pos), kwonly)
        return self.run_kernel(tuple(pos), kwonly)

    def _call_autograd(self, pos: tuple, kwonly: dict):
        if self.autograd_cls is not None:
            return self.autograd_cls.apply(*flatten_args(pos, kwonly))
        kernel = self.kernels.get("Autograd")
        if kernel is not None:
            return kernel(*pos, **kwonly)
        if self.custom_op:
            if self._no_formula_cls is None:
                self._no_formula_cls = no_formula_function(self)
            return self._no_formula_cls.apply(*flatten_args(pos, kwonly))
        key, kernel = self._backend_kernel(pos)
        if key != "CompositeImplicitAutograd":
            warnings.warn(
                f"{self.qualname}: an autograd kernel was not registered to the Autograd key(s) but "
                "we are trying to backprop through it. This may lead to silently incorrect behavior. "
                "This behavior is deprecated and will be removed in a future version of PyTorch. If "
                "your operator is differentiable, please ensure you have registered an autograd "
                "kernel to the correct Autograd key (e.g. DispatchKey::Autograd, "
                "DispatchKey::CompositeImplicitAutograd) (shardflow: torch.library.register_autograd).",
                UserWarning, stacklevel=4)
        return self._checked(kernel, pos, kwonly)

    def _device_type(self, pos: tuple) -> str:
        for t in _tensors(pos):
            return t.device.type
        return "cpu"

    def _backend_kernel(self, pos: tuple):
        dev = self._device_type(pos)
        for key in (_DEVICE_KEY.get(dev, dev.upper()), "CompositeExplicitAutograd", "CompositeImplicitAutograd"):
            kernel = self.kernels.get(key)
            if kernel is not None:
                return key, kernel
        raise NotImplementedError(
            f"Could not run '{self.qualname}' with arguments from the '{_DEVICE_KEY.get(dev, dev.upper())}' "
            f"backend: the operator has kernels for {sorted(self.kernels) or 'no backend'} (fix: register "
            f"one with torch.library.register_kernel('{self.qualname}', '{dev}') or Library.impl)")

    def run_kernel(self, pos: tuple, kwonly: dict):
        """The backend kernel on these arguments (no autograd step)."""
        _, kernel = self._backend_kernel(pos)
        if self.custom_op:
            with no_grad():
                return self._checked(kernel, pos, kwonly)
        return self._checked(kernel, pos, kwonly)

    def _checked(self, kernel, pos: tuple, kwonly: dict):
        out = kernel(*pos, **kwonly)
        mutated = [v for a, v in zip([a for a in self.schema.arguments if not a.kwarg_only], pos)
                   if a.is_write]
        mutated += [kwonly[a.name] for a in self.schema.arguments if a.kwarg_only and a.is_write]
        for t in _tensors(mutated):
            t._version_counter[0] += 1
        if self.custom_op:
            self._check_no_alias(out, pos, kwonly)
        return out

    def _check_no_alias(self, out, pos, kwonly) -> None:
        outs = list(_tensors(out if isinstance(out, (list, tuple)) else (out,)))
        ins = list(_tensors(list(pos) + list(kwonly.values())))
        for i, o in enumerate(outs):
            bad = any(o is t or _shares(o, t) for t in ins) or any(_shares(o, other) for other in outs[i + 1:])
            if bad:
                raise RuntimeError(
                    f"{self.name}: The output of this custom operator (1) must not also be an input to "
                    "this custom operator and (2) may not alias any inputs to this custom operator or "
                    "other returns. The most common way to trigger this error is if we have y = "
                    "custom_op(x) and y and x are the same Tensor. Please instead return a clone of the "
                    "offending output tensor(s) (e.g. return x.clone()) or refactor the custom operator "
                    "to not return y.")

    def _run_fake(self, pos: tuple, kwonly: dict):
        fake = self.fake or self.kernels.get("Meta")
        if fake is None:
            raise RuntimeError(
                f"There was no fake impl registered for <CustomOpDef({self.qualname})>. This is "
                "necessary for torch.compile/export/fx tracing to work. Please use "
                f"`{self.name}.register_fake` to add an fake impl.")
        return fake(*pos, **kwonly)


class OpOverload:
    """``torch.ops.ns.name.default``: the operator with one schema (Python operators have one
    overload, ``default``, unless their schema names another)."""

    def __init__(self, opdef: OpDef, overload: str):
        self._opdef = opdef
        self._overloadname = overload
        self.__name__ = f"{opdef.name}.{overload}"
        self.__qualname__ = self.__name__

    def __call__(self, *args, **kwargs):
        return self._opdef.call(args, kwargs)

    @property
    def _schema(self):
        return self._opdef.schema

    @property
    def namespace(self) -> str:
        return self._opdef.ns

    @property
    def overloadpacket(self):
        return self._opdef.packet

    @property
    def op(self):
        return self

    def name(self) -> str:
        tail = "" if self._overloadname == "default" else f".{self._overloadname}"
        return self._opdef.qualname + tail

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self._opdef.ns}.{self._opdef.name}', overload='{self._overloadname}')>"

    def __str__(self) -> str:
        return f"{self._opdef.ns}.{self._opdef.name}.{self._overloadname}"


class OpOverloadPacket:
    """``torch.ops.ns.name``: calling it calls its one overload."""

    def __init__(self, opdef: OpDef):
        self._opdef = opdef
        self._overload = OpOverload(opdef, opdef.schema.overload_name or "default")
        self.__name__ = opdef.name
        self.__qualname__ = opdef.name

    def __call__(self, *args, **kwargs):
        return self._opdef.call(args, kwargs)

    def __getattr__(self, name: str):
        if name == self.__dict__["_overload"]._overloadname:
            return self.__dict__["_overload"]
        raise AttributeError(f"The underlying op of '{self}' has no overload name '{name}'")

    def overloads(self) -> list:
        return [self._overload._overloadname]

    @property
    def _qualified_op_name(self) -> str:
        return self._opdef.qualname

    @property
    def _schema(self):
        return self._opdef.schema

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._opdef.ns}.{self._opdef.name}')>"

    def __str__(self) -> str:
        return f"{self._opdef.ns}.{self._opdef.name}"


def define_op(ns: str, schema, *, custom_op: bool = False) -> OpDef:
    """Register a new operator ``ns::<schema.name>`` (torch's error if it exists)."""
    existing = op_namespace.lookup(ns, schema.name)
    if existing is not None:
        raise RuntimeError(
            f"Tried to register an operator ({ns}::{schema}) with the same name and overload name "
            "multiple times. Each overload's schema should only be registered with a single call to "
            f"def(). (fix: define {ns}::{schema.name} once, or use a new name)")
    opdef = OpDef(ns, schema.name, schema, custom_op=custom_op)
    schema.name = f"{ns}::{schema.name}"
    op_namespace.register_op(ns, opdef.name, opdef.packet)
    return opdef


def find_op(qualname: str) -> OpDef:
    """The OpDef of ``"ns::name"`` (``.default`` allowed); a clear error if none."""
    ns, sep, rest = qualname.partition("::")
    if not sep:
        raise ValueError(f"Expected an operator name 'namespace::name', got {qualname!r}")
    name = rest.split(".", 1)[0]
    packet = op_namespace.lookup(ns, name)
    if packet is None:
        raise RuntimeError(f"Operator {qualname} does not exist (define it first with "
                           "torch.library.custom_op, torch.library.define or Library.define)")
    return packet._opdef


def opdef_of(op) -> OpDef:
    """The OpDef behind a CustomOpDef, OpOverload, OpOverloadPacket or ``"ns::name"``."""
    if isinstance(op, str):
        return find_op(op)
    if isinstance(op, (OpOverload, OpOverloadPacket)):
        return op._opdef
    inner = getattr(op, "_opdef", None)
    if isinstance(inner, OpDef):
        return inner
    raise TypeError(f"Expected an operator (a CustomOpDef, torch.ops.<ns>.<name>[.default] or "
                    f"'ns::name'), got {type(op).__name__}")
