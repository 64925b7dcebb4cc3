"""The settings objects behind ``torch._dynamo.config`` and ``torch._inductor.config``.

Programs written for ``torch.compile`` set compiler knobs as module attributes
(``torch._dynamo.config.cache_size_limit = 64``, ``torch._inductor.config.coordinate_descent_tuning
= True``). A ``ConfigModule`` holds PyTorch's names with PyTorch 2.13's defaults and behaves as
torch's does where programs can tell: reading or setting a name it does not have raises
``AttributeError: torch._dynamo.config.foo does not exist``, and ``patch(...)`` changes
settings for a ``with`` block or a decorated function. A setting may be *linked* to the
shardflow variable that does the same job (``cache_size_limit`` is ``shardflow.compile``'s own
limit): reading and writing it then go to that variable. The others are recorded only: they
tune Dynamo's bytecode capture or Inductor's code generation, which shardflow's compiler
(trace the op calls, replay the graph: ``jit/api.py``) does not have.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types


class ConfigModule:
    """Named settings with defaults; ``subconfigs`` are nested ``ConfigModule``s
    (``torch._inductor.config.triton.cudagraphs``); ``linked`` maps a name to
    ``(getter, setter)`` of the shardflow variable it stands for."""

    def __init__(self, name: str, defaults: dict, subconfigs: dict | None = None,
                 linked: dict | None = None):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", dict(defaults))
        object.__setattr__(self, "_subs", dict(subconfigs or {}))
        object.__setattr__(self, "_linked", dict(linked or {}))

    def _missing(self, key: str) -> AttributeError:
        return AttributeError(f"{self._name}.{key} does not exist")

    def __getattr__(self, key: str):
        if key.startswith("__"):
            raise AttributeError(key)
        if key in self._linked:
            return self._linked[key][0]()
        if key in self._values:
            return self._values[key]
        if key in self._subs:
            return self._subs[key]
        raise self._missing(key)

    def __setattr__(self, key: str, value) -> None:
        if key in self._linked:
            self._linked[key][1](value)
        elif key in self._values:
            self._values[key] = value
        else:
            raise self._missing(key)

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"{self._name}.{key}: settings cannot be deleted; set them instead")

    def __dir__(self):
        return sorted(set(self._values) | set(self._subs) | set(self._linked))

    def get_config_copy(self) -> dict:
        """Every setting's current value (nested ones as ``"triton.cudagraphs"``)."""
        out = {k: getattr(self, k) for k in (*self._values, *self._linked)}
        for sub_name, sub in self._subs.items():
            out.update({f"{sub_name}.{k}": v for k, v in sub.get_config_copy().items()})
        return out

    def patch(self, arg1=None, arg2=None, **changes):
        """``with config.patch(cache_size_limit=64):`` / ``@config.patch("name", value)``:
        the settings changed inside, restored after (even on an exception)."""
        if isinstance(arg1, str):
            changes[arg1] = arg2
        elif isinstance(arg1, dict):
            changes.update(arg1)
        elif arg1 is not None:
            raise TypeError(f"patch: expected a setting name, a dict or keywords, got {type(arg1).__name__}")
        for key in changes:
            self._resolve(key)  # refuse an unknown name before changing anything
        return _Patch(self, changes)

    def _resolve(self, dotted: str):
        head, _, rest = dotted.partition(".")
        if rest:
            sub = getattr(self, head)
            if not isinstance(sub, ConfigModule):
                raise self._missing(dotted)
            return sub._resolve(rest)
        getattr(self, head)  # raises for an unknown name
        return self, head


class _Patch(contextlib.ContextDecorator):
    def __init__(self, config: ConfigModule, changes: dict):
        self.config, self.changes, self.saved = config, changes, []

    def __enter__(self):
        for key, value in self.changes.items():
            owner, name = self.config._resolve(key)
            self.saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, value)
        return self

    def __exit__(self, *exc):
        while self.saved:
            owner, name, value = self.saved.pop()
            setattr(owner, name, value)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def patched(*args, **kwargs):
            with _Patch(self.config, self.changes):
                return fn(*args, **kwargs)
        return patched


def install(module_name: str, config: ConfigModule) -> None:
    """Make the module ``module_name`` (the caller's own, e.g. ``shardflow._dynamo.config``)
    read and write ``config``'s settings as its attributes, as PyTorch's config modules do
    (``import torch._dynamo.config as c; c.cache_size_limit = 64``). Python supports this
    directly: a module's ``__class__`` may be set to a ``ModuleType`` subclass."""
    module = sys.modules[module_name]
    module.__dict__["_config"] = config
    module.__class__ = _ConfigModuleType
    assert isinstance(module, types.ModuleType)


class _ConfigModuleType(types.ModuleType):
    """A config module: attributes it does not define itself are ``_config``'s settings."""

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        return getattr(self.__dict__["_config"], key)

    def __setattr__(self, key, value):
        if key.startswith("__") or key in self.__dict__:
            super().__setattr__(key, value)
        else:
            setattr(self.__dict__["_config"], key, value)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(dir(self.__dict__["_config"])))
