"""``torch.export``: importable with torch's names, so a program that exports its model as an
optional last step (``from torch.export import export, Dim``) loads and trains; exporting raises.

torch's ``export`` captures a whole program as an ATen-level graph with symbolic shapes and
guards (``ExportedProgram``) for deployment runtimes (ExecuTorch, AOTInductor, TensorRT).
shardflow has no ATen operator set, symbolic shapes or export runtime, so ``export``,
``draft_export``, ``save``, ``load``, ``unflatten``, ``default_decompositions``, ``Dim`` /
``dims`` (dynamic-shape specs only ``export`` reads) and the other names raise
NotImplementedError saying what to use instead: ``shardflow.fx.symbolic_trace(model)`` for a
graph of the model's calls to inspect or rewrite, ``shardflow.compile`` / ``compile_step``
for faster execution, and, to deploy, the weights saved with ``shardflow.save`` loaded into
the same model class under PyTorch, exported there. The classes cannot be instantiated; they
exist for ``isinstance`` checks and annotations (nothing is ever an ``ExportedProgram`` here).
"""

from __future__ import annotations

__all__ = ["AdditionalInputs", "Constraint", "CustomDecompTable", "default_decompositions", "Dim", "dims",
           "draft_export", "export", "ExportBackwardSignature", "ExportedProgram", "ExportGraphSignature",
           "FlatArgsAdapter", "load", "ModuleCallEntry", "ModuleCallSignature", "register_dataclass", "save",
           "ShapesCollection", "unflatten", "UnflattenedModule"]

_INSTEAD = ("use shardflow.fx.symbolic_trace(model) for a graph of the model to inspect or rewrite, "
            "shardflow.compile(model) / shardflow.compile_step for speed, and to deploy: "
            "shardflow.save(model.state_dict(), 'model.safetensors'), load the weights into the same model "
            "class under PyTorch and call torch.export.export there")


def _refuse(what: str):
    raise NotImplementedError(f"torch.export.{what}: shardflow has no export (no ATen graph capture, symbolic "
                              f"shapes or ExportedProgram runtime); {_INSTEAD}")


def export(mod, args=(), kwargs=None, *, dynamic_shapes=None, strict=False, preserve_module_call_signature=(),
           prefer_deferred_runtime_asserts_over_guards=False):
    """Refused (see the module docstring)."""
    _refuse(f"export({type(mod).__name__})")


def draft_export(mod, args=(), kwargs=None, *, dynamic_shapes=None, preserve_module_call_signature=(),
                 strict=False, prefer_deferred_runtime_asserts_over_guards=False):
    """Refused (see the module docstring)."""
    _refuse(f"draft_export({type(mod).__name__})")


def save(ep, f, *args, **kwargs):
    """Refused: there is never an ExportedProgram to save."""
    _refuse("save()")


def load(f, *args, **kwargs):
    """Refused: an exported program cannot run here."""
    _refuse("load()")


def unflatten(module, flat_args_adapter=None):
    """Refused: there is never an ExportedProgram to unflatten."""
    _refuse("unflatten()")


def default_decompositions():
    """Refused: shardflow has no ATen decomposition table."""
    _refuse("default_decompositions()")


def register_dataclass(cls, *, serialized_type_name=None):
    """Refused: a registration only ``export`` would read."""
    _refuse(f"register_dataclass({getattr(cls, '__name__', cls)!r})")


def Dim(name, *, min=None, max=None):  # noqa: N802 - torch's name
    """Refused: a dynamic-shape spec only ``export`` reads."""
    _refuse(f"Dim({name!r})")


def dims(*names, min=None, max=None):
    """Refused: dynamic-shape specs only ``export`` reads."""
    _refuse("dims()")


class _Refused:
    """A torch.export class shardflow has no instances of (``isinstance`` is always False)."""

    def __init__(self, *args, **kwargs):
        _refuse(type(self).__name__)


class AdditionalInputs(_Refused):
    pass


class Constraint(_Refused):
    pass


class CustomDecompTable(_Refused):
    pass


class ExportBackwardSignature(_Refused):
    pass


class ExportedProgram(_Refused):
    pass


class ExportGraphSignature(_Refused):
    pass


class FlatArgsAdapter(_Refused):
    pass


class ModuleCallEntry(_Refused):
    pass


class ModuleCallSignature(_Refused):
    pass


class ShapesCollection(_Refused):
    pass


class UnflattenedModule(_Refused):
    pass
