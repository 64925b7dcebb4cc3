"""``torch.library.Library`` and the function-style registration API (``define``, ``impl``,
``register_fake``, ``register_autograd``, ``register_kernel``, ``get_ctx``).

``Library(ns, "DEF")`` owns a namespace (a second ``DEF`` of it raises torch's error),
``"FRAGMENT"`` adds to one, ``"IMPL"`` only registers kernels. ``lib.define(schema)`` defines
an operator, ``lib.impl(name, fn, dispatch_key)`` registers a kernel for ``"CPU"``, ``"CUDA"``,
``"Meta"``, ``"Autograd"`` or the composite keys (``operator.py`` for how a call picks one).
As in torch, what a ``Library`` object registered is removed when the object is garbage
collected (keep it alive, e.g. at module level), and ``torch.library.define`` / ``impl``
keep their own Library alive; the ``register_*`` functions' ``lib=`` ties a registration to
that Library the same way. ``register_fake`` replaces an earlier fake kernel, as torch 2.13
does (its ``allow_override`` therefore changes nothing); ``alias_analysis`` (the TorchScript
alias model) is checked and has no effect. Overriding a built-in (``Library("aten", "IMPL")``) is refused:
shardflow's ops are Python functions with no dispatcher keys to override.
"""

from __future__ import annotations

import weakref

from ..ops import _op_namespace as op_namespace
from .custom_op import CustomOpDef, device_keys
from .operator import DISPATCH_KEYS, define_op, find_op, opdef_of
from .schema import parse_schema

__all__ = ["Library", "define", "impl", "register_fake", "impl_abstract", "register_autograd",
           "register_kernel", "register_vmap", "get_ctx", "fallthrough_kernel"]

_DEF_NAMESPACES: set = set()
_KEEP_ALIVE: list = []  # the Libraries torch.library.define/impl make for themselves


def _cleanup(ns, defined, registered, owns_ns):
    """What a Library registered, undone when it is garbage collected (torch's rule)."""
    for name in defined:
        op_namespace.remove_op(ns, name)
    for opdef, attr, key, value in registered:
        if attr == "kernels":
            if opdef.kernels.get(key) is value:
                del opdef.kernels[key]
        elif getattr(opdef, attr) is value:
            setattr(opdef, attr, None)
    if owns_ns:
        _DEF_NAMESPACES.discard(ns)


def _record(lib, opdef, attr: str) -> None:
    """Tie ``opdef.<attr>`` (just set) to ``lib``'s lifetime (the ``lib=`` argument)."""
    if lib is not None:
        lib._kernels.append((opdef, attr, None, getattr(opdef, attr)))


class Library:
    """``torch.library.Library(ns, kind, dispatch_key="")`` (module docstring)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if ns == "aten" or ns in ("prim", "prims", "quantized"):
            raise NotImplementedError(
                f"Library({ns!r}, {kind!r}): registering kernels for torch's built-in operators is not "
                "supported in shardflow (its ops are Python functions, not dispatcher entries); define "
                "your own namespace's operators instead")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put "
                    "all of your definitions in a single TORCH_LIBRARY block. (fix: make the later ones "
                    "Library(ns, 'FRAGMENT'))")
            _DEF_NAMESPACES.add(ns)
        if dispatch_key and dispatch_key not in DISPATCH_KEYS:
            raise NotImplementedError(f"Library(dispatch_key={dispatch_key!r}): shardflow has the keys {DISPATCH_KEYS}")
        op_namespace.register_namespace(ns)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._defined: list = []
        self._kernels: list = []
        self._finalizer = weakref.finalize(self, _cleanup, ns, self._defined, self._kernels, kind == "DEF")

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Define an operator from its schema string; returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError(f"Library(kind='IMPL') of {self.ns} cannot define operators; use 'DEF' or 'FRAGMENT'")
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        if tags:
            raise NotImplementedError(f"Library.define({schema!r}, tags=...): operator tags are not built in shardflow")
        parsed = parse_schema(schema)
        if "::" in parsed.name:
            ns, _, parsed.name = parsed.name.partition("::")
            if ns != self.ns:
                raise ValueError(f"Library.define: the schema's namespace {ns!r} is not this Library's {self.ns!r}")
        opdef = define_op(self.ns, parsed)
        self._defined.append(opdef.name)
        return opdef.name

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False, allow_override: bool = False):
        """Register ``fn`` as ``op_name``'s kernel for ``dispatch_key``."""
        if with_keyset:
            raise NotImplementedError("Library.impl(with_keyset=True): shardflow passes no DispatchKeySet to kernels")
        if fn is fallthrough_kernel:
            raise NotImplementedError("Library.impl(fallthrough_kernel): shardflow has no dispatch keys to fall through")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if key not in DISPATCH_KEYS:
            raise NotImplementedError(f"Library.impl(dispatch_key={key!r}): shardflow has the keys {DISPATCH_KEYS}")
        key = {"AutogradCPU": "Autograd", "AutogradCUDA": "Autograd"}.get(key, key)
        if isinstance(op_name, str):
            opdef = find_op(op_name if "::" in op_name else f"{self.ns}::{op_name}")
        else:
            opdef = opdef_of(op_name)
        if key in opdef.kernels and not allow_override:
            raise RuntimeError(
                f"This is not allowed since there's already a kernel registered from python overriding "
                f"{opdef.name}'s behavior for {key} dispatch key and {self.ns} namespace. (fix: pass "
                "allow_override=True)")
        opdef.kernels[key] = fn
        self._kernels.append((opdef, "kernels", key, fn))

    def fallback(self, fn, dispatch_key: str = "", *, with_keyset: bool = False):
        raise NotImplementedError("Library.fallback: shardflow has no dispatcher fallbacks")

    def _destroy(self):
        self._finalizer()


def fallthrough_kernel():
    """torch's marker kernel; registering it is refused (``Library.impl``)."""
    raise NotImplementedError("fallthrough_kernel should never be called.")


def _own_library(ns: str, kind: str = "FRAGMENT") -> Library:
    lib = Library(ns, kind)
    _KEEP_ALIVE.append(lib)
    return lib


def define(qualname: str, schema: str, *, lib=None, tags=()):
    """``torch.library.define("ns::name", "(Tensor x) -> Tensor")``."""
    ns, sep, name = qualname.partition("::")
    if not sep:
        raise ValueError(f"define(qualname): expected 'namespace::name', got {qualname!r}")
    if lib is None:
        lib = _own_library(ns)
    lib.define(name + schema, tags=tags)


def impl(qualname, types, func=None, *, lib=None):
    """``torch.library.impl("ns::name", "cpu")`` (a decorator without ``func``): the kernel
    for those device types (``"default"``: every device)."""
    if isinstance(types, str):
        types = (types,)
    keys = []
    for t in types:
        if t == "default":
            keys.append("CompositeExplicitAutograd")
        elif t in DISPATCH_KEYS:
            keys.append(t)
        else:
            keys += device_keys(t)

    def register(f):
        opdef = opdef_of(qualname)
        target = lib if lib is not None else _own_library(opdef.ns)
        for key in keys:
            target.impl(opdef.name, f, key, allow_override=True)
        return f

    return register if func is None else register(func)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """A kernel of ``op`` for ``device_types`` (decorator when ``func`` is None)."""
    if isinstance(op, CustomOpDef):
        return op.register_kernel(device_types, func)
    return impl(op, "default" if device_types is None else device_types, func, lib=lib)


def register_fake(op, func=None, /, *, lib=None, _stacklevel: int = 1, allow_override: bool = False):
    """The fake (meta) kernel of ``op`` (decorator when ``func`` is None)."""
    def register(f):
        opdef = opdef_of(op)
        opdef.fake = f
        _record(lib, opdef, "fake")
        return f

    return register if func is None else register(func)


impl_abstract = register_fake  # torch's deprecated name


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """The gradient formula of ``op`` (``autograd_kernel.py``)."""
    opdef = opdef_of(op)
    opdef.set_autograd(backward, setup_context)
    _record(lib, opdef, "autograd_cls")


def register_vmap(op, func=None, /, *, lib=None):
    """Kept, not used: vmap runs the operator per sample here (custom_op.py)."""
    def register(f):
        opdef = opdef_of(op)
        opdef.vmap = f
        _record(lib, opdef, "vmap")
        return f

    return register if func is None else register(func)


def get_ctx():
    """torch's fake-kernel context (``ctx.new_dynamic_size()`` for data-dependent shapes):
    shardflow runs fake kernels only on meta tensors and in ``opcheck``, where no symbolic
    sizes exist, so this raises."""
    raise NotImplementedError(
        "torch.library.get_ctx(): shardflow has no FakeTensor mode or symbolic sizes; a fake kernel "
        "with a data-dependent output shape cannot run here (call the real operator instead)")
