"""``torch.classes``: the namespace of custom C++ classes registered with ``torch::class_``.

shardflow loads no C++ extensions, so no class is ever registered: ``classes.ns.Name``
raises torch's RuntimeError for an unregistered class, ``loaded_libraries`` is empty, and
``load_library`` refuses (write the class in Python, or register an op with
``shardflow.library``).
"""

from __future__ import annotations

__all__ = ["load_library", "loaded_libraries"]

loaded_libraries: set = set()


class _ClassNamespace:
    """``torch.classes.<ns>``: every attribute is a class that was never registered."""

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, attr):
        raise RuntimeError(
            f"Tried to instantiate class '{self.name}.{attr}', but it does not exist! Ensure that it is "
            "registered via torch::class_ (shardflow loads no C++ classes: define the class in Python)")


def load_library(path: str) -> None:
    """torch loads a shared library that registers custom classes; shardflow cannot."""
    raise NotImplementedError(
        f"shardflow.classes.load_library({path!r}): shardflow cannot load C++ extension libraries "
        "(expected a Python implementation); write the class in Python or register the operator "
        "with shardflow.library")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _ClassNamespace(name)
