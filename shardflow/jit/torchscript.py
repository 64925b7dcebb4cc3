"""``torch.jit``'s TorchScript surface for programs that decorate with it, run eagerly.

shardflow has no TorchScript compiler: scripting and tracing are compiler hints with the
program's own semantics. ``script(module)`` / ``trace(module, inputs)`` return the module's
scripted / traced view (``scripted.py``: it runs the module eagerly, prints and answers as
torch's ``RecursiveScriptModule`` / traced module, and its ``.code`` / ``.graph`` /
``.save()`` raise NotImplementedError); both warn as torch 2.13 (DeprecationWarning).
``freeze`` of such a view gives torch's frozen printout (a plain module or one in
training mode: torch's RuntimeErrors). ``script`` / ``trace`` of a function return a
``ScriptFunction`` over it (printed as torch's; ``.code`` / ``.graph`` raise). ``trace_module``,
``optimize_for_inference`` and the decorators (``ignore``, ``unused``, ``export``,
``interface``, ``script_method``, ``script_if_tracing``) return what they are given
unchanged, and the function runs as Python. ``is_scripting()`` / ``is_tracing()``
are False (code guarded by them takes its eager branch, as under torch outside a script);
``annotate`` returns the value; ``Final`` is ``typing.Final``; ``Attribute`` is torch's
``(value, type)`` pair, unwrapped by ``ScriptModule``. ``fork`` runs the call at once and
returns a completed ``shardflow.futures.Future``; ``wait`` returns its value (or raises its
error). ``save`` / ``load`` raise: a TorchScript archive holds compiled code shardflow cannot
write or run; the error names the fix (a ``state_dict`` through ``shardflow.save``/``load``).
"""

from __future__ import annotations

import types
import typing
import warnings
from collections import namedtuple

from ..futures import Future
from ..nn import Module
from .scripted import ScriptedView, frozen_view, no_torchscript, scripted_view

__all__ = ["script", "trace", "trace_module", "freeze", "optimize_for_inference", "ignore", "unused", "export",
           "interface", "script_method", "script_if_tracing", "is_scripting", "is_tracing", "annotate", "Final",
           "Attribute", "fork", "wait", "save", "load", "ScriptModule", "ScriptFunction", "RecursiveScriptModule",
           "TracerWarning", "TracedModule", "enable_onednn_fusion", "onednn_fusion_enabled"]

Final = typing.Final
Attribute = namedtuple("Attribute", ["value", "type"])


class TracerWarning(Warning):
    """torch's warning category for tracing (``warnings.filterwarnings('ignore', category=...)``)."""


def _deprecated(name: str, instead: str) -> None:
    # torch 2.13's DeprecationWarning (torch also names torch.export, which shardflow lacks)
    warnings.warn(f"`shardflow.jit.{name}` is deprecated. Please switch to {instead}.", DeprecationWarning,
                  stacklevel=3)


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """An ``nn.Module``: its scripted view (``scripted.py``: it runs eagerly, prints as torch's
    ``RecursiveScriptModule``); a function: a ``ScriptFunction`` over it; a class: ``obj``
    unchanged. All run eagerly."""
    _deprecated("script", "`shardflow.compile`")
    if isinstance(obj, Module) and not isinstance(obj, ScriptModule):
        return scripted_view(obj, "script", RecursiveScriptModule)
    if isinstance(obj, types.FunctionType):
        return ScriptFunction(obj)
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True, check_inputs=None,
          check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs: bool = True):
    """An ``nn.Module``: its traced view (``scripted.py``; prints as torch's traced module); a
    function: a ``ScriptFunction`` over it. Either runs eagerly, so data-dependent branches stay live,
    where a torch trace would freeze the one taken for ``example_inputs``."""
    _deprecated("trace", "`shardflow.compile`")
    if isinstance(func, Module) and not isinstance(func, ScriptModule):
        return scripted_view(func, "trace", TracedModule)
    if isinstance(func, types.FunctionType):
        return ScriptFunction(func)
    return func


def trace_module(mod, inputs, optimize=None, check_trace: bool = True, check_inputs=None,
                 check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg: bool = False,
                 _store_inputs: bool = True):
    return mod


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """A scripted / traced module's frozen view (``scripted.py``), with torch's errors for a
    plain ``nn.Module`` or one in training mode. ``preserved_attrs`` / ``optimize_numerics``
    change nothing here: nothing is compiled, so no attribute is folded away."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    if isinstance(mod, ScriptedView):
        return frozen_view(mod, RecursiveScriptModule)
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


def ignore(drop=False, **kwargs):
    """``@ignore`` or ``@ignore(drop=True)``: the function unchanged."""
    if callable(drop):
        return drop
    if drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function call on compilation. "
                      "Use torch.jit.unused now. {}", FutureWarning, stacklevel=2)
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def interface(obj):
    return obj


def script_method(fn):
    # torch 2.13 warns at every decoration, attributed to its own module (stacklevel 1), so
    # Python's default filters hide it and ``-W always`` shows one per method, as here
    warnings.warn("`shardflow.jit.script_method` is deprecated. Please switch to `shardflow.compile`.",
                  DeprecationWarning, stacklevel=1)
    return fn


def script_if_tracing(fn):
    return fn


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type, the_value):
    return the_value


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` now; the returned Future holds its result or its error."""
    fut = Future()
    try:
        fut.set_result(func(*args, **kwargs))
    except Exception as e:  # delivered by wait(), as torch's fork delivers a task's error
        fut.set_exception(e)
    return fut


def wait(future):
    return future.wait()


def save(m, f, _extra_files=None) -> None:
    raise RuntimeError("shardflow.jit.save: shardflow has no TorchScript, so it cannot write a TorchScript archive; "
                       "save the weights instead: shardflow.save(model.state_dict(), path), and rebuild the model "
                       "from its Python class with model.load_state_dict(shardflow.load(path))")


def load(f, map_location=None, _extra_files=None, _restore_shapes: bool = False):
    raise RuntimeError(f"shardflow.jit.load({f!r}): shardflow cannot run TorchScript archives (compiled code); in "
                       "PyTorch, save the weights with torch.save(model.state_dict(), path), then build the model "
                       "from its Python class here and call model.load_state_dict(shardflow.load(path))")


class ScriptModule(Module):
    """Base of torch's scripted modules: an ``nn.Module`` here (methods decorated with
    ``script_method`` run eagerly); an ``Attribute(value, type)`` assigned to it stores ``value``."""

    def __setattr__(self, name, value) -> None:
        if isinstance(value, Attribute):
            value = value.value
        super().__setattr__(name, value)


class RecursiveScriptModule(ScriptedView, ScriptModule):
    """torch's type of ``script(module)``'s result: here the module's scripted view, run
    eagerly (``scripted.py``)."""


class TracedModule(ScriptedView, ScriptModule):
    """torch's type of ``trace(module, ...)``'s result: here the module's traced view, run
    eagerly (``scripted.py``)."""


class ScriptFunction:
    """torch's type of ``script(function)`` / ``trace(function, inputs)``: here the function,
    run eagerly, seen as torch's object -- printed as torch prints it, ``qualified_name``,
    the function's ``__doc__``; ``.code`` / ``.graph`` / ``.save()`` raise NotImplementedError
    (no TorchScript). Like torch's, it is not a descriptor (no method binding)."""

    def __init__(self, fn) -> None:
        self._sf_fn = fn
        self.__doc__ = fn.__doc__
        # torch's: the function's module path under __torch__ (none for a script's __main__)
        module = getattr(fn, "__module__", None)
        path = [] if module in (None, "__main__") else [module]
        self.qualified_name = ".".join(["__torch__", *path, getattr(fn, "__qualname__", getattr(fn, "__name__", "fn"))])
        self.name = getattr(fn, "__name__", "fn")

    def __call__(self, *args, **kwargs):
        return self._sf_fn(*args, **kwargs)

    def __getattr__(self, name: str):
        if name in ("code", "graph", "inlined_graph", "code_with_constants", "schema", "graph_for"):
            raise no_torchscript(f"ScriptFunction.{name}")
        raise AttributeError(f"'ScriptFunction' object has no attribute '{name}'")

    def save(self, f, **kwargs) -> None:
        raise no_torchscript(f"ScriptFunction.save({f!r})")

    def __repr__(self) -> str:
        # torch's printout, its doubled module path included (pybind names the class
        # "torch.jit.ScriptFunction" inside module torch.jit)
        return f"<shardflow.jit.shardflow.jit.ScriptFunction object at {hex(id(self))}>"


def enable_onednn_fusion(enabled: bool) -> None:
    """Accepted for torch's API: shardflow has no oneDNN graph fuser."""


def onednn_fusion_enabled() -> bool:
    return False
