"""``Module``: the base class of every layer, with PyTorch's semantics.

Registration: ``__setattr__`` routes a ``Parameter`` into ``_parameters``, a ``Module`` into
``_modules`` and (for names already registered as buffers) a Tensor into ``_buffers``; the
dicts keep registration order, which is the order of ``parameters()`` and ``state_dict()``.
``__getattr__`` (only reached when normal lookup fails) looks in those three dicts.

Traversal: ``named_modules``/``named_parameters``/``named_buffers`` walk the tree depth
first and by default drop repeats by identity, so a tied weight
(``self.lm_head.weight = self.wte.weight``) is yielded once, under its first name.
``state_dict`` does not deduplicate (PyTorch's behaviour: both names are saved).

``load_state_dict`` validates first (missing keys, unexpected keys, shape mismatches over the
whole tree), raises one RuntimeError listing every problem before touching any tensor, and
only then copies values *in place* into the existing arrays (no autograd), so an optimizer
holding the Parameters keeps working.

Dtype/device moves (``to``, ``float``, ``half`` ...) replace each parameter's array in place
of the same Parameter object, so identity (and optimizer references) survive.

Hooks: forward pre-hooks, forward hooks (optionally with kwargs) and full backward
(pre-)hooks. Backward hooks wrap the tensor inputs and outputs of ``forward`` in identity
graph nodes; the output node records ``grad_output`` and the input node calls the hook with
``(module, grad_input, grad_output)`` and lets it replace ``grad_input``.
"""

from __future__ import annotations

import functools
import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator

import numpy as np

from ..autograd import Function, Tensor, dispatch, no_grad, sparse_grad
from ..backend import (
    as_dtype,
    device_of,
    dtypes,
    get_array_module,
    new_array,
    shared_memory,
    to_device,
)
from ..backend import device as _device
from ..backend.device import unavailable_device_error
from ..backend.memory_format import check_memory_format, in_memory_format
from ..backend.user_warning import warn_at_caller
from . import module_global_hooks as _global_hooks
from .module_hooks import _MIXED_BACKWARD_HOOKS, attach_legacy_backward_hooks
from .parameter import Buffer, Parameter
from .removable_handle import RemovableHandle

__all__ = ["Module", "RemovableHandle"]


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"  # torch's key for get_extra_state's object


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _shape_str(shape) -> str:
    return str(tuple(int(s) for s in shape))


def _size_str(shape) -> str:
    """``shardflow.Size([3, 2])``: torch's size-mismatch message prints the ``Size``."""
    return f"shardflow.Size({[int(s) for s in shape]})"


def _global_source(key, target, value):
    """``(this rank's array, None)`` for the value loaded into global parameter ``target``, or
    ``(None, error)``. A global value must have the parameter's logical shape (re-laid out to
    the parameter's sbp if it has another); a plain value must be the whole tensor, of which
    this rank keeps its part. A plain value of this rank's shard shape is refused: it cannot
    be told from a whole tensor of another model, and loading it silently put one rank's
    rows where another's belong (an FSDP resume drifted by 1e-2)."""
    spec = target._spec
    want = tuple(spec.shape)
    if isinstance(value, Tensor) and value._spec is not None:
        if tuple(value._spec.shape) != want:
            return None, (f"size mismatch for {key}: copying a param with shape "
                          f"{_shape_str(value._spec.shape)} from checkpoint, the shape in current "
                          f"model is {_shape_str(want)}.")
        if value._spec.sbp != spec.sbp:
            value = value.to_global(sbp=spec.sbp)
        return value.array, None
    arr = _as_array_value(value)
    if tuple(arr.shape) == want:
        return dispatch.op("_lay_out_like")(target, Tensor(arr)).array, None
    return None, (
        f"size mismatch for {key}: the parameter is a global tensor of shape {_shape_str(want)} "
        f"laid out {spec.sbp} (this rank holds {_shape_str(target.array.shape)}); got a plain "
        f"tensor of shape {_shape_str(arr.shape)}. A plain value must be the whole tensor. To "
        "load this rank's shard, make it global first (DTensor.from_local(shard, mesh, "
        "placements) or shard.to_global(placement, sbp)), or load the state_dict() of a model "
        "with the same layout (its values are global tensors).")


def _as_array_value(value):
    """State-dict values: shardflow Tensors, NumPy arrays, or anything with ``.numpy()``
    (a torch tensor: converted with ``.detach().cpu().numpy()``)."""
    if isinstance(value, Tensor):
        return value.array
    if isinstance(value, np.ndarray | np.generic):
        return np.asarray(value)
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch.Tensor
        v = value.detach()
        if hasattr(v, "cpu"):
            v = v.cpu()
        return v.numpy()
    if hasattr(value, "__array__"):
        return np.asarray(value)
    raise TypeError(
        f"state_dict values must be Tensors or arrays, got {type(value).__name__}; "
        "convert it with shardflow.tensor(...)"
    )


class _BackwardHookFn(Function):
    """Identity over several tensors whose backward calls the module's backward hooks.

    As torch's ``BackwardHook``: the hooks see ``grad_input`` / ``grad_output`` with one entry
    per top-level argument / output (None where it is not a Tensor: an LSTM's ``(h, c)``
    tuple); a Tensor argument's gradient is zeros of its shape and dtype where none flowed
    (torch materialises its node's input gradients: an index tensor, a constant), while a
    ``grad_output`` entry that got no gradient stays None (torch reads those before
    materialising). A hook must return that many entries (torch's RuntimeError otherwise).

    Its outputs are its inputs returned as they are, so (as torch's ``BackwardHookFunction``)
    an in-place write into one while grad is recorded is refused (``outputs_alias_inputs``:
    ``Tensor._check_inplace_allowed``): e.g. ``ReLU(inplace=True)`` under a full backward hook.

    A global tensor's output keeps its placement and sbp; the hooks see each rank's local
    gradients (this rank's shard of a split tensor's gradient; torch's DTensor hooks get
    DTensors), as the node's backward receives them."""

    save_inputs = ()
    torch_name = "BackwardHookFunctionBackward"
    outputs_alias_inputs = "BackwardHookFunction"

    def forward(self, *arrays, state=None, role=None, positions=(), count=1, zeros=None):
        self.state, self.role, self.positions, self.count = state, role, positions, count
        self.zeros = zeros or {}  # position -> (shape, dtype, device) of a Tensor input not passed here
        if role == "input":  # for the zeros of an input that gets no gradient
            self.like = [(a.shape, a.dtype, get_array_module(a)) for a in arrays]
        return arrays if len(arrays) > 1 else arrays[0]

    def _pack(self, grads):
        from .. import ops
        from ..autograd import _wrap

        full = [None] * self.count
        for i, g in zip(self.positions, grads):
            full[i] = g
        if self.role == "input":  # materialised, as torch's node does for its inputs
            for i, (shape, dtype, device) in self.zeros.items():
                full[i] = ops.zeros(shape, dtype=dtype, device=device)
            for i, (shape, dtype, xp) in zip(self.positions, self.like):
                if full[i] is None:
                    full[i] = _wrap(xp.zeros(shape, dtype))
        return tuple(full)

    def backward(self, *grads):
        from ..autograd import _wrap

        state, module = self.state, self.state["module"]
        tgrads = self._pack(_wrap(g) if g is not None else None for g in grads)
        if self.role == "output":
            for hook in [*_global_hooks.BACKWARD_PRE.values(), *module._backward_pre_hooks.values()]:
                res = hook(module, tgrads)
                if res is not None:
                    res = tuple(res) if isinstance(res, tuple | list) else (res,)
                    if len(res) != len(tgrads):
                        raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                           f"{len(res)}, but expected {len(tgrads)}")
                    tgrads = res
            state["grad_output"] = tgrads
            if not state["has_input"]:
                if module._backward_hooks or _global_hooks.BACKWARD:
                    warn_at_caller(
                        "Full backward hook is firing when gradients are computed with respect to "
                        "module outputs since no inputs require gradients. See "
                        "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn."
                        "Module.register_full_backward_hook for more details.")
                grad_inputs = (None,) * state["n_inputs"]
                for hook in [*_global_hooks.BACKWARD.values(), *module._backward_hooks.values()]:
                    res = hook(module, grad_inputs, tgrads)
                    if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
        else:
            gout = state.get("grad_output", (None,))
            for hook in [*_global_hooks.BACKWARD.values(), *module._backward_hooks.values()]:
                res = hook(module, tgrads, gout)
                if res is not None:
                    res = tuple(res) if isinstance(res, tuple | list) else (res,)
                    if len(res) != len(tgrads):
                        raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                           f"{len(res)}, but expected {len(tgrads)}")
                    tgrads = res
        out = tuple(g.array if isinstance(g, Tensor) else g for g in (tgrads[i] for i in self.positions))
        return out if len(out) > 1 else out[0]


def _hook_positions(values):
    """The positions of ``values`` (a module's args, or its output tuple) that go through
    ``_BackwardHookFn``: the Tensors that require grad."""
    return [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]


def _apply_hook_fn(values, positions, state, role):
    tensors = [values[i] for i in positions]
    zeros = None
    if role == "input":  # the other Tensor arguments get zero gradients in grad_input
        zeros = {i: (tuple(v.shape), v.dtype, v.device) for i, v in enumerate(values)
                 if isinstance(v, Tensor) and i not in positions}
    res = _BackwardHookFn.apply(*tensors, state=state, role=role, positions=tuple(positions), count=len(values),
                                zeros=zeros)
    if not isinstance(res, tuple):
        res = (res,)
    values = list(values)
    for i, r in zip(positions, res):
        # a global tensor stays global (its local data passed through): the module's ops
        # refused the local one, "mixes global tensors with a local tensor ... requires grad"
        r._spec = values[i]._spec
        values[i] = r
    return values


# The symbolic tracer's hook on module calls (``shardflow.fx``, only while a trace runs):
# ``interceptor(module, call, args, kwargs)`` decides whether a call becomes one graph node
# (a leaf module) or runs ``call(*args, **kwargs)`` to be traced through. Also what
# ``utils.module_tracker.ModuleTracker`` (and the FLOP counter over it) installs to see module
# calls, passing them on to the interceptor it replaced. A one-element list, read by
# ``__call__`` without a global statement; None (one check per call) otherwise.
_call_interceptor: list = [None]


def set_call_interceptor(interceptor):
    """Install (or remove, with None) the hook that sees every ``Module.__call__`` first;
    returns the one it replaces (to be put back)."""
    previous, _call_interceptor[0] = _call_interceptor[0], interceptor
    return previous


# The same tracer's hook on parameter reads (``self.weight``): ``interceptor(module, name,
# parameter)`` returns what the read gives (a proxy of a ``get_attr`` node while tracing, so
# ``self.w.t()`` is recorded rather than computed once). Only ``__getattr__``'s parameter
# branch checks it.
_parameter_interceptor: list = [None]


def set_parameter_interceptor(interceptor):
    """Install (or remove, with None) the hook that sees every parameter read first;
    returns the one it replaces (to be put back)."""
    previous, _parameter_interceptor[0] = _parameter_interceptor[0], interceptor
    return previous


def module_repr(module, children) -> str:
    """PyTorch's module printout: ``Name(extra)`` on one line, or the extra lines and each
    ``(key): child`` of ``children`` (``(key, module)`` pairs) indented under ``Name(``."""
    extra = module.extra_repr()
    extra_lines = extra.split("\n") if extra else []
    child_lines = [f"({key}): " + _addindent(repr(child), 2) for key, child in children]
    lines = extra_lines + child_lines
    main = module._get_name() + "("
    if lines:
        if len(extra_lines) == 1 and not child_lines:
            main += extra_lines[0]
        else:
            main += "\n  " + "\n  ".join(lines) + "\n"
    return main + ")"


def _prefix_hint(missing: list, unexpected: list) -> str:
    """A line after torch's load_state_dict error when one key prefix explains every missing
    and unexpected key: a checkpoint saved from a wrapper (DistributedDataParallel's
    ``module.``, torch.compile's ``_orig_mod.``) loaded into the bare model, or the reverse."""
    if not missing or not unexpected or len(missing) != len(unexpected):
        return ""
    for longer, shorter, whose in ((unexpected, missing, "checkpoint"), (missing, unexpected, "model")):
        first = longer[0]
        for key in shorter:
            prefix = first[: len(first) - len(key)]
            if not (first.endswith(key) and prefix.endswith(".")):
                continue
            if all(k.startswith(prefix) for k in longer) and \
                    {k[len(prefix):] for k in longer} == set(shorter):
                name = prefix[:-1]
                if whose == "checkpoint":
                    return (f"\n\t(Every unexpected key is a missing key with the prefix '{prefix}': the "
                            f"checkpoint was saved from a model that held this one as its submodule "
                            f"'{name}' (DistributedDataParallel's 'module.', torch.compile's "
                            "'_orig_mod.'). Strip the prefix first: torch.nn.modules.utils."
                            f"consume_prefix_in_state_dict_if_present(state_dict, '{prefix}').)")
                return (f"\n\t(Every missing key is an unexpected key with the prefix '{prefix}': the "
                        f"checkpoint holds the weights of this model's submodule '{name}' (a "
                        "DistributedDataParallel model's 'module.'). Load it into that submodule: "
                        f"model.get_submodule('{name}').load_state_dict(state_dict).)")
    return ""


class Module:
    """Base class for all neural network modules (PyTorch's ``torch.nn.Module``)."""

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments {args} {kwargs}; "
                "Module.__init__ takes none (call super().__init__() with no arguments)"
            )
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_forward_hooks_always_called"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function; '
            "define forward(self, ...) in the subclass"
        )

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running_mean)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string, got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'buffer name can\'t contain ".", got {name!r}')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(shardflow Tensor or None required)"
            )
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = Tensor(tensor.array)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter; ``None`` registers the name with no value (e.g. ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string, got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'parameter name can\'t contain ".", got {name!r}')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(shardflow.nn.Parameter or None required); wrap it: nn.Parameter(t)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"cannot assign non-leaf Tensor to parameter '{name}'; model parameters must be "
                "created explicitly: use .detach() or nn.Parameter(t.detach())"
            )
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as an attribute under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string, got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def __getattr__(self, name: str):
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                if _parameter_interceptor[0] is not None:  # a symbolic trace (shardflow.fx)
                    return _parameter_interceptor[0](self, name, p[name])
                return p[name]
            b = d["_buffers"]
            if name in b:
                return b[name]
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules)
            self._non_persistent_buffers_set.discard(name)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(shardflow.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, self._parameters, self._buffers)
            self._non_persistent_buffers_set.discard(name)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(shardflow.nn.Module or None expected)"
                )
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer):
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._remove_from(name, d, self._parameters, self._modules)
            self.register_buffer(name, value, value.persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(shardflow.Tensor or None expected)"
                )
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *dicts) -> None:
        for dd in dicts:
            if name in dd:
                del dd[name]

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(k for k in keys if not k[0].isdigit()))

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)

    # ------------------------------------------------------------------ traversal
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None:
                    continue
                if remove_duplicate:
                    if id(v) in memo:
                        continue
                    memo.add(id(v))
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(name, Parameter)`` pairs, depth first, each shared Parameter once."""
        return self._named_members(
            lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
            remove_duplicate=remove_duplicate,
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members(
            lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
            remove_duplicate=remove_duplicate,
        )

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """``(name, module)`` for this module and every descendant, depth first (pre-order).
        ``memo`` holds the modules already yielded (PyTorch passes a set of modules; ids or
        modules are both accepted here)."""
        if memo is None:
            memo = set()
        if id(self) in memo or self in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def get_submodule(self, target: str) -> Module:
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}` (looking up '{target}')")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module (looking up '{target}')")
        return mod

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's ``forward`` in place with ``shardflow.compile`` (torch's
        ``Module.compile``; the same arguments). See ``jit.api.compile_in_place``."""
        from ..jit.api import compile_in_place  # jit (L6) compiles modules: the one upward edge

        compile_in_place(self, *args, **kwargs)

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless ``strict``, add) the submodule at dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, last = target.split(".")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, last):
            raise AttributeError(parent._get_name() + " has no attribute `" + last + "`")
        if hasattr(parent, last) and not isinstance(getattr(parent, last), Module):
            raise AttributeError("`" + last + "` is not an nn.Module")
        setattr(parent, last, module)

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return p

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer of {mod._get_name()}")
        return mod._buffers[name]

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {type(mode).__name__}")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            elif p.grad.is_sparse:
                p.grad = sparse_grad.zeroed(p.grad)
            else:
                if p.grad.grad_fn is not None:
                    p.grad = p.grad.detach()
                p.grad.array[...] = 0
                p.grad._version_counter[0] += 1

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every child (recursively) and then on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def share_memory(self) -> Module:
        """PyTorch's ``Module.share_memory()``: move every parameter and buffer, and their
        ``.grad``, into shared memory in place (``Tensor.share_memory_``), so processes the
        module is given to (``shardflow.multiprocessing``, fork or spawn) update the same
        memory: Hogwild training. Tensors that view one array (tied weights,
        ``Parameter(t)``) are moved together and stay views of one shared copy. Every tensor
        is checked before any moves (CPU and local)."""
        tensors, seen = [], set()
        for m in self.modules():
            for t in itertools.chain(m._parameters.values(), m._buffers.values()):
                for x in (t, None if t is None else t.grad):
                    if x is not None and id(x) not in seen:
                        seen.add(id(x))
                        tensors.append(x)
        for t in tensors:
            if t._spec is not None or not isinstance(t.array, np.ndarray):
                t.share_memory_()  # raises, saying why, before anything moved
        with shared_memory.lock:
            moved = shared_memory.share_arrays([t.array for t in tensors])
            for t, a in zip(tensors, moved):
                t.array = a
        return self

    # ------------------------------------------------------------------ dtype / device
    def _apply_array(self, fn, float_only: bool = False) -> Module:
        """Replace every parameter's / buffer's (and grad's) array by ``fn(array)`` in place
        of the same Tensor object."""
        seen = set()
        for m in self.modules():
            for coll in (m._parameters, m._buffers):
                for t in coll.values():
                    if t is None or id(t) in seen:
                        continue
                    seen.add(id(t))
                    if float_only and not t.is_floating_point():
                        continue
                    new = fn(t.array)
                    if new is not t.array:
                        t.array = new
                        t._version_counter[0] += 1
                    if t.grad is not None:
                        g = fn(t.grad.array)
                        if g is not t.grad.array:
                            t.grad.array = g
        return self

    def to_global(self, placement=None, sbp=None) -> Module:
        """OneFlow's ``module.to_global(placement, sbp)``: lay every parameter and buffer out
        over ``placement`` in place (each keeps its identity, so an optimizer made before
        still updates it). ``sbp`` is one layout for all, or a callable
        ``sbp(name, tensor) -> sbp`` (None keeps that tensor local). Every rank must hold the
        same values first (same seed, or a broadcast); each then keeps its shard."""
        from ..autograd.dispatch import op

        convert = op("_module_to_global")
        if placement is None or sbp is None:
            raise ValueError("Module.to_global needs placement and sbp (or a callable sbp)")
        seen = set()
        for mname, m in self.named_modules():
            for coll in (m._parameters, m._buffers):
                for pname, t in coll.items():
                    if t is None or id(t) in seen:
                        continue
                    seen.add(id(t))
                    full = f"{mname}.{pname}" if mname else pname
                    layout = sbp(full, t) if callable(sbp) else sbp
                    if layout is not None and t._spec is None:
                        convert(t, placement, layout)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: in place.
        Only floating-point parameters and buffers change dtype (PyTorch's rule);
        ``memory_format=`` lays the 4-d / 5-d ones out so (a conv weight channels-last)."""
        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"Module.to() got unexpected keyword arguments {sorted(kwargs)}")
        if memory_format is not None:
            check_memory_format("to", memory_format)
        for a in args:
            if isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, dtypes.dtype) or isinstance(a, np.dtype) or a in (float,):
                dtype = a
            elif a is not None:
                dev = a
        if dtype is not None:
            dtype = as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(
                    f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}"
                )
        if dev is not None:
            dev = _device(dev)
            self._apply_array(lambda a: a if device_of(a) == dev else to_device(a, dev))
        if dtype is not None:
            npd = dtype.np
            self._apply_array(lambda a: a if a.dtype == npd else a.astype(npd), float_only=True)
        if memory_format is not None:
            # torch's rule: the format applies to 4-d and 5-d parameters and buffers (a conv
            # weight), whose layout changes in place (backend/memory_format.py)
            def relayout(a):
                if a.ndim not in (4, 5):
                    return a
                check_memory_format("to", memory_format, a.ndim)
                return in_memory_format(a, memory_format)

            self._apply_array(relayout)
        return self

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """PyTorch's ``to_empty``: every parameter and buffer (and gradient) becomes an
        uninitialised array of its shape and dtype on ``device``, in place (the same Tensor
        objects, so a layout or an optimizer made before still holds them; a global
        parameter keeps its layout and gets a shard of its local shape). The way from a
        module built on the meta device (``backend/meta.py``) to one with memory; initialise
        it next (``reset_parameters()``, or a model's own init)."""
        dev = _device(device)

        def empty(a):
            return new_array(dev, lambda xp: xp.empty(a.shape, a.dtype))

        seen = set()
        for m in (self.modules() if recurse else [self]):
            for coll in (m._parameters, m._buffers):
                for t in coll.values():
                    if t is None or id(t) in seen:
                        continue
                    seen.add(id(t))
                    t.array = empty(t.array)
                    t._version_counter[0] += 1
                    if t.grad is not None:
                        t.grad.array = empty(t.grad.array)
        return self

    def _cast(self, d) -> Module:
        npd = d.np
        return self._apply_array(lambda a: a if a.dtype == npd else a.astype(npd), float_only=True)

    def float(self) -> Module:
        return self._cast(dtypes.float32)

    def double(self) -> Module:
        return self._cast(dtypes.float64)

    def half(self) -> Module:
        return self._cast(dtypes.float16)

    def bfloat16(self) -> Module:
        return self._cast(dtypes.bfloat16)

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        return self.to("cuda" if device is None else f"cuda:{int(device)}")

    def type(self, dst_type) -> Module:
        return self._cast(as_dtype(dst_type))

    # devices shardflow has no backend for: torch's errors when it is built without them
    def ipu(self, device=None) -> Module:
        raise unavailable_device_error(_device("ipu"))

    def xpu(self, device=None) -> Module:
        raise unavailable_device_error(_device("xpu"))

    def mtia(self, device=None) -> Module:
        raise unavailable_device_error(_device("mtia"))

    # ------------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def get_extra_state(self):
        """The extra (picklable) state a subclass saves under ``<prefix>_extra_state``;
        override it together with ``set_extra_state`` (torch's contract)."""
        raise RuntimeError(
            f"{self._get_name()}.get_extra_state() was called but {self._get_name()} does not "
            "override it; override get_extra_state and set_extra_state together to save extra state."
        )

    def set_extra_state(self, state) -> None:
        """Restore what ``get_extra_state`` returned; called by ``load_state_dict``."""
        raise RuntimeError(
            f"{self._get_name()}.set_extra_state() was called but {self._get_name()} does not "
            "override it; override get_extra_state and set_extra_state together to load extra state."
        )

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of every parameter and persistent buffer by dotted name (detached
        Tensors sharing memory with the module unless ``keep_vars``)."""
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        # torch's per-module metadata (``sd._metadata["layer1.0.bn1"] == {"version": 2}``):
        # a module's ``_load_from_state_dict`` reads its ``version`` (torchvision's MNASNet)
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, local_metadata)
            if res is not None:
                destination = res
        return destination

    def _state_entries(self, prefix: str = ""):
        """Every (key, owner module, attribute name, kind) that state_dict would save."""
        out = []
        for name, p in self._parameters.items():
            if p is not None:
                out.append((prefix + name, self, name, "param"))
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                out.append((prefix + name, self, name, "buffer"))
        if type(self).set_extra_state is not Module.set_extra_state:
            out.append((prefix + _EXTRA_STATE_KEY_SUFFIX, self, _EXTRA_STATE_KEY_SUFFIX, "extra"))
        for name, module in self._modules.items():
            if module is not None:
                out.extend(module._state_entries(prefix + name + "."))
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into this module, in place.

        ``assign=True`` (torch's): each parameter and buffer becomes the state dict's tensor
        itself, sharing its memory, on its device and in its dtype, wrapped in a Parameter
        that keeps the old one's ``requires_grad`` (how a model built on the meta device
        gets its values); a global (sharded) parameter keeps its object and layout.

        Returns ``(missing_keys, unexpected_keys)``. With ``strict`` a missing or unexpected
        key is an error; a shape mismatch is always an error. Every problem is reported in
        one RuntimeError raised before any tensor is modified.
        """
        if not isinstance(state_dict, dict):
            hint = (" (a path: read the file first, model.load_state_dict(torch.load(PATH)))"
                    if isinstance(state_dict, str | bytes) or hasattr(state_dict, "__fspath__") else "")
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.{hint}")
        state_dict = self._run_load_state_dict_pre_hooks(state_dict, strict)
        state_dict, override_errors = self._run_load_from_state_dict_overrides(state_dict, strict)
        entries = self._state_entries()
        expected = {k for k, *_ in entries}
        missing = [k for k, *_ in entries if k not in state_dict]
        unexpected = [k for k in state_dict if k not in expected]
        errors = list(override_errors)
        plan = []
        for key, owner, name, kind in entries:
            if key not in state_dict:
                continue
            if kind == "extra":  # no shape: set_extra_state takes the saved object as is
                plan.append((owner, name, kind, None, state_dict[key]))
                continue
            target = owner._parameters[name] if kind == "param" else owner._buffers[name]
            if target._spec is not None:  # a global (sharded) parameter: shapes are logical
                src, error = _global_source(key, target, state_dict[key])
                if error:
                    errors.append(error)
                else:
                    plan.append((owner, name, kind, target, src))
                continue
            try:
                src = _as_array_value(state_dict[key])
            except TypeError:  # torch's words, among the other errors (it raised alone)
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(state_dict[key])} "
                    "(a shardflow or torch Tensor, or a NumPy array)")
                continue
            if tuple(src.shape) != tuple(target.array.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {_size_str(src.shape)} "
                    f"from checkpoint, the shape in current model is {_size_str(target.array.shape)}."
                )
                continue
            plan.append((owner, name, kind, target, src))
        if strict:
            if unexpected:
                errors.insert(
                    0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". "
                )
            if missing:
                errors.insert(
                    0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". "
                )
        if errors:
            hint = _prefix_hint(missing, unexpected) if strict else ""
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors) + hint
            )
        with no_grad():
            for owner, name, kind, target, src in plan:
                if kind == "extra":
                    owner.set_extra_state(src)
                    continue
                if assign and target._spec is None:  # a global parameter keeps its layout
                    # torch's rule: the module takes the state dict's tensor itself (its
                    # device, dtype and memory: a meta-device model gets the loaded CPU
                    # values; before, they were moved to the meta device and lost)
                    arr = src
                    if kind == "param":
                        owner._parameters[name] = Parameter(Tensor(arr), requires_grad=target.requires_grad)
                    else:
                        owner._buffers[name] = Tensor(arr)
                    continue
                dst = target.array
                if assign:  # a global parameter keeps its object and layout, takes src's array
                    target.array = src  # (the way a meta-device model, e.g. FSDP2's, gets data)
                    target._version_counter[0] += 1
                    continue
                if device_of(dst) != device_of(src):
                    src = to_device(src, device_of(dst))
                if src.dtype != dst.dtype:
                    src = src.astype(np.float32).astype(dst.dtype) if dst.dtype.kind == "V" or src.dtype.kind == "V" else src.astype(dst.dtype)
                dst[...] = src
                target._version_counter[0] += 1
        result = _IncompatibleKeys(missing, unexpected)
        for hook in self._load_state_dict_post_hooks.values():
            hook(self, result)
        return result

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """torch's per-module loading step, for subclasses to override (torchvision's MNASNet
        reads ``local_metadata["version"]`` there; FrozenBatchNorm2d deletes its
        ``num_batches_tracked`` key): ``load_state_dict`` calls each override, parent before
        children, on a copy of the state dict it may edit, with the state dict's
        ``_metadata`` entry for that module ({} for a plain dict), and raises what it appends
        to ``error_msgs``. This base version copies nothing: shardflow copies the whole
        model's tensors after the overrides ran (all or nothing), so ``missing_keys`` /
        ``unexpected_keys`` are computed there, not from what an override appends."""

    def _run_load_from_state_dict_overrides(self, state_dict, strict):
        """Call every overridden ``_load_from_state_dict`` (see there), walking the modules
        as torch's ``load`` does so that one that replaces its children (MNASNet's version-1
        stem) has the new children visited. Returns (state dict, error messages)."""
        if not any(type(m)._load_from_state_dict is not Module._load_from_state_dict for m in self.modules()):
            return state_dict, []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        errors: list[str] = []

        def visit(module, prefix):
            if type(module)._load_from_state_dict is not Module._load_from_state_dict:
                local = metadata.get(prefix[:-1], {}) if metadata is not None else {}
                module._load_from_state_dict(state_dict, prefix, local, strict, [], [], errors)
            for name, child in module._modules.items():
                if child is not None:
                    visit(child, prefix + name + ".")

        visit(self, "")
        return state_dict, errors

    def _run_load_state_dict_pre_hooks(self, state_dict, strict):
        """Each module's load-state-dict pre-hooks, with its prefix, on a copy of
        ``state_dict`` (hooks may rename keys, e.g. weight norm's legacy ``weight_g``)."""
        hooked = [(prefix, m) for prefix, m in self.named_modules(remove_duplicate=False)
                  if m.__dict__.get("_load_state_dict_pre_hooks")]
        if not hooked:
            return state_dict
        state_dict = OrderedDict(state_dict)
        for prefix, m in hooked:
            for hook in list(m._load_state_dict_pre_hooks.values()):
                hook(state_dict, prefix + "." if prefix else "", {}, strict, [], [], [])
        return state_dict

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False) -> RemovableHandle:
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` (``with_module``: the module first) before ``load_state_dict`` reads
        this module's keys; it may edit ``state_dict`` (a copy of the caller's)."""
        if "_load_state_dict_pre_hooks" not in self.__dict__:
            self.__dict__["_load_state_dict_pre_hooks"] = OrderedDict()
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = functools.partial(hook, self) if with_module else hook
        return handle

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before ``load_state_dict`` reads this module's keys."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` after this module's entries."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        if "_state_dict_pre_hooks" not in self.__dict__:  # lazily: modules pickled before it load
            self.__dict__["_state_dict_pre_hooks"] = OrderedDict()
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` on this module."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args) -> None | new_args`` (``with_kwargs``:
        ``hook(module, args, kwargs) -> None | (new_args, new_kwargs)``) before ``forward``."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(
        self, hook, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ):
        """``hook(module, args, output) -> None | new_output`` (``with_kwargs``:
        ``hook(module, args, kwargs, output)``) after ``forward``."""
        handle = RemovableHandle(
            self._forward_hooks, self._forward_hooks_with_kwargs, self._forward_hooks_always_called
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output) -> None | new_grad_input``, called when the
        gradients with respect to the module's tensor inputs have been computed."""
        if self.__dict__.get("_legacy_backward_hooks"):
            raise RuntimeError(_MIXED_BACKWARD_HOOKS)
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """torch's legacy (non-full) backward hook: ``hook(module, grad_input, grad_output)``
        runs as a hook on the autograd node that made the module's output, so ``grad_input``
        holds the gradients of that last node's inputs (a Conv2d's: input, weight, bias), not
        the module's (``module_hooks.py``); torch's FutureWarning says when that misses some.
        Prefer ``register_full_backward_hook``."""
        if self._backward_hooks:
            raise RuntimeError(_MIXED_BACKWARD_HOOKS)
        hooks = self.__dict__.setdefault("_legacy_backward_hooks", OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output) -> None | new_grad_output`` before the module's
        input gradients are computed."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args, **kwargs):
        if _call_interceptor[0] is not None:  # a symbolic trace is running (shardflow.fx)
            return _call_interceptor[0](self, self._call_uninterpreted, args, kwargs)
        d = self.__dict__
        if not (d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"]
                or d["_backward_pre_hooks"] or d.get("_legacy_backward_hooks")
                or _global_hooks.any_registered()):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_uninterpreted(self, *args, **kwargs):
        """``__call__`` as when no call interceptor is installed (hooks, then forward)."""
        d = self.__dict__
        if not (d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"]
                or d["_backward_pre_hooks"] or d.get("_legacy_backward_hooks")
                or _global_hooks.any_registered()):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for hook in list(_global_hooks.FORWARD_PRE.values()):  # every module's, first (torch's order)
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError(
                            "forward pre-hook registered with_kwargs must return None or a tuple "
                            f"(new_args, new_kwargs), got {type(res).__name__}"
                        )
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        bw = bool(self._backward_hooks or self._backward_pre_hooks or _global_hooks.BACKWARD
                  or _global_hooks.BACKWARD_PRE)
        state = None
        if bw:
            from ..autograd import is_grad_enabled

            if not is_grad_enabled():
                bw = False
        if bw:
            state = {"module": self, "has_input": False, "n_inputs": len(args)}
            pos = _hook_positions(args)
            if pos:
                state["has_input"] = True
                args = tuple(_apply_hook_fn(args, pos, state, "input"))
        result = self.forward(*args, **kwargs)
        # every module's forward hooks first, then this module's (torch's order)
        for hooks, with_kwargs in ((_global_hooks.FORWARD, _global_hooks.FORWARD_WITH_KWARGS),
                                   (self._forward_hooks, self._forward_hooks_with_kwargs)):
            for hid, hook in list(hooks.items()):
                res = hook(self, args, kwargs, result) if hid in with_kwargs else hook(self, args, result)
                if res is not None:
                    result = res
        legacy = self.__dict__.get("_legacy_backward_hooks")
        if legacy:
            attach_legacy_backward_hooks(self, legacy, args, result)
        if bw:
            if isinstance(result, Tensor):
                if result.requires_grad:
                    result = _apply_hook_fn([result], [0], state, "output")[0]
            elif isinstance(result, tuple | list):
                pos = _hook_positions(result)
                if pos:
                    result = type(result)(_apply_hook_fn(result, pos, state, "output"))
        return result

    # ------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return module_repr(self, self._modules.items())
