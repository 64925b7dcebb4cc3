"""PEP 562 lazy attributes for a package, the one implementation its ``__init__`` files use.

``__getattr__, __dir__ = lazy_attributes(__name__, globals(), submodules, names)``: a name in
``submodules`` imports ``package.name`` on first access (the import binds it in the package);
``names`` maps an attribute to ``(submodule, attribute)`` (``attribute`` None: the submodule
itself), imported on first access and bound in the package so later lookups skip
``__getattr__``. ``dir(package)`` lists them all. Why packages load parts lazily:
docs/ARCHITECTURE.md ("which names load lazily").
"""

from __future__ import annotations

from importlib import import_module


def lazy_attributes(package: str, namespace: dict, submodules=frozenset(), names=None):
    names = dict(names or {})
    submodules = frozenset(submodules)

    def __getattr__(name):
        if name in submodules:
            return import_module(f"{package}.{name}")
        if name in names:
            module, attribute = names[name]
            value = import_module(f"{package}.{module}")
            if attribute is not None:
                value = getattr(value, attribute)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | submodules | set(names))

    return __getattr__, __dir__
