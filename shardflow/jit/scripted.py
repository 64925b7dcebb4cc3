"""What ``shardflow.jit.script(module)`` / ``trace(module, inputs)`` return: the module, run
eagerly, seen through torch's scripted-module surface.

shardflow has no TorchScript compiler, so the module's own Python ``forward`` runs (a torch
trace would freeze the data-dependent branches taken for the example inputs; a script
compiles them). What torch's result shows of itself is torch's:

* ``print``: torch's layout, ``original_name=`` and no per-layer settings; a traced module
  and its children are named by their classes (``MyCell(original_name=MyCell ...)``), a
  scripted one ``RecursiveScriptModule(original_name=MyCell ...)``;
* the same parameters and buffers (the original's objects: an optimizer built on either
  trains both), the same child names, ``state_dict`` keys, ``train()`` / ``eval()`` reaching
  the original, attributes and methods (``@export``-ed ones too) read from the original;
* ``isinstance(m, ScriptModule)`` and ``nn.Module``;
* ``jit.freeze`` of it (in eval mode, as torch demands) prints
  ``RecursiveScriptModule(original_name=...)`` with no parameters or submodules left.

What it cannot give raises NotImplementedError saying so: ``.code`` / ``.graph`` /
``.inlined_graph`` / ``.code_with_constants`` (TorchScript IR and source) and ``.save()``
(a TorchScript archive).
"""

from __future__ import annotations

from ..nn import Module

_NO_IR = ("code", "graph", "inlined_graph", "code_with_constants")


def no_torchscript(what: str):
    return NotImplementedError(
        f"{what}: shardflow has no TorchScript compiler, so a scripted or traced module has no TorchScript "
        "IR or code; it runs its Python forward eagerly (read that with inspect.getsource(type(module).forward)). "
        "To keep a model, save its weights: shardflow.save(module.state_dict(), path)")


class ScriptedView(Module):
    """The scripted / traced view of an ``nn.Module`` (module docstring). Made by
    :func:`scripted_view`; subclasses ``ScriptModule`` through ``torchscript.py``."""

    def __init__(self, original: Module, kind: str) -> None:
        super().__init__()
        object.__setattr__(self, "_sf_original", original)
        object.__setattr__(self, "_sf_kind", kind)
        self.training = original.training
        if kind == "frozen":  # torch's frozen module: parameters folded in, submodules inlined
            return
        # the original's own Parameter / buffer objects, under the original's names
        self._parameters.update(original._parameters)
        self._buffers.update(original._buffers)
        self._non_persistent_buffers_set = set(original._non_persistent_buffers_set)
        for name, child in original._modules.items():
            self._modules[name] = None if child is None else scripted_view(child, kind, type(self))

    @property
    def original_name(self) -> str:
        return type(self._sf_original).__name__

    def forward(self, *args, **kwargs):
        return self._sf_original(*args, **kwargs)

    def train(self, mode: bool = True) -> Module:
        self._sf_original.train(mode)
        return super().train(mode)

    def __getattr__(self, name: str):
        if name in _NO_IR:
            raise no_torchscript(f"{type(self).__name__}.{name}")
        try:
            return super().__getattr__(name)
        except AttributeError:
            original = self.__dict__.get("_sf_original")
            if original is None:
                raise
            return getattr(original, name)

    def save(self, f, **kwargs) -> None:
        raise no_torchscript(f"{self._get_name()}.save({f!r})")

    def _get_name(self) -> str:
        return self.original_name if self._sf_kind == "trace" else "RecursiveScriptModule"

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"


def frozen_view(view: ScriptedView, cls: type) -> Module:
    """torch's ``jit.freeze`` of a scripted / traced module: it prints
    ``RecursiveScriptModule(original_name=...)`` and holds no parameters, buffers or submodules
    (torch folds them into the code); it runs the same module eagerly."""
    return cls(view._sf_original, "frozen")


def scripted_view(module: Module, kind: str, cls: type) -> Module:
    """``module`` seen as scripted (``kind="script"``) or traced (``"trace"``) through ``cls``
    (a ``ScriptedView`` subclass); a module already scripted or traced comes back as it is."""
    if isinstance(module, ScriptedView):
        return module
    return cls(module, kind)


__all__ = ["ScriptedView", "frozen_view", "no_torchscript", "scripted_view"]
