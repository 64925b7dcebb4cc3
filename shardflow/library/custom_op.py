"""``torch.library.custom_op``: a Python function as an operator (``torch.ops.ns.name``).

``@custom_op("mylib::crop", mutates_args=())`` infers the schema from the function's type
annotations (``schema.py``), defines the operator and returns a ``CustomOpDef``: calling it
calls the operator; ``register_fake``, ``register_autograd``, ``register_kernel`` and
``register_vmap`` add to it (``operator.py`` for how a call runs).

``device_types``: the function is the kernel for those device types only (``"cpu"``,
``("cpu", "cuda")``); None: for every device. ``register_vmap`` is kept but not used:
``torch.func.vmap`` here calls the operator once per sample (``func/_vmap.py``), which needs
no rule. ``register_torch_dispatch`` and ``register_autocast`` are refused (no Python
dispatch modes; autocast casts only shardflow's own ops).
"""

from __future__ import annotations

from .operator import define_op
from .schema import infer_schema, parse_schema

__all__ = ["CustomOpDef", "custom_op", "device_keys"]


def device_keys(device_types) -> list:
    """Dispatch keys for ``device_types`` (None: every device -> CompositeExplicitAutograd)."""
    if device_types is None:
        return ["CompositeExplicitAutograd"]
    if isinstance(device_types, str):
        device_types = [device_types]
    keys = []
    for d in device_types:
        d = str(d).split(":")[0]
        if d not in ("cpu", "cuda", "meta"):
            raise ValueError(f"device_types: expected 'cpu' or 'cuda' (shardflow's devices), got {d!r}")
        keys.append({"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}[d])
    return keys


class CustomOpDef:
    """What ``custom_op`` returns (torch's class name): the operator, callable, plus the
    ``register_*`` methods."""

    def __init__(self, namespace: str, name: str, schema: str, fn, device_types=None):
        self._namespace = namespace
        self._name = name
        self._init_fn = fn
        self._opdef = define_op(namespace, parse_schema(f"{name}{schema}"), custom_op=True)
        for key in device_keys(device_types):
            self._opdef.kernels[key] = fn
        self.__doc__ = fn.__doc__
        self.__name__ = name

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    @property
    def _opoverload(self):
        return self._opdef.packet.default

    def __call__(self, *args, **kwargs):
        return self._opdef.call(args, kwargs)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def register_fake(self, fn, /):
        """The fake (meta) kernel: output Tensors of the right shape/dtype/device, no data."""
        self._opdef.fake = fn
        return fn

    def register_kernel(self, device_types, fn=None, /):
        """A kernel for ``device_types`` (decorator when ``fn`` is None)."""
        def inner(f):
            for key in device_keys(device_types):
                self._opdef.kernels[key] = f
            return f
        return inner if fn is None else inner(fn)

    def register_autograd(self, backward, /, *, setup_context=None):
        """The gradient formula (``autograd_kernel.py``)."""
        if not callable(backward):
            raise TypeError(f"register_autograd: expected backward to be a function, got {type(backward).__name__}")
        self._opdef.set_autograd(backward, setup_context)

    def register_vmap(self, func=None, /):
        """Kept, not used: vmap here runs the operator per sample (module docstring)."""
        def inner(f):
            self._opdef.vmap = f
            return f
        return inner if func is None else inner(func)

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        raise NotImplementedError(
            f"{self._qualname}.register_torch_dispatch: shardflow has no __torch_dispatch__ modes or "
            "tensor subclasses dispatch; register a kernel (register_kernel) instead")

    def register_autocast(self, device_type, cast_inputs):
        raise NotImplementedError(
            f"{self._qualname}.register_autocast: autocast casts shardflow's own ops only; cast the "
            f"inputs to {cast_inputs} inside the operator's function instead")


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """``torch.library.custom_op`` (module docstring); a decorator when ``fn`` is None."""
    ns, sep, opname = name.partition("::")
    if not sep or not ns or not opname:
        raise ValueError(f"custom_op: expected a name 'namespace::op_name' (e.g. 'mylib::crop'), got {name!r}")
    if tags:
        raise NotImplementedError(f"custom_op({name!r}, tags=...): operator tags are not built in shardflow")

    def inner(f):
        text = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        return CustomOpDef(ns, opname, text, f, device_types)

    return inner if fn is None else inner(fn)
