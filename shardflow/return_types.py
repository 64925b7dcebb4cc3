"""``torch.return_types``: the named tuples ops with several results return (``values,
indices = x.max(1)``; ``torch.return_types.max``), as a module, so ``from torch.return_types
import max`` works and the results pickle (pickle finds a class by its module path). The
classes are defined with the ops (``ops/reduce.py``); torch's ``*_out`` variants (the types of
``out=`` results) are not separate classes here.
"""

from .ops.reduce import return_types as _types

_NAMES = sorted(k for k in vars(_types) if not k.startswith("__"))
globals().update({k: getattr(_types, k) for k in _NAMES})
__all__ = [k for k in _NAMES if not k.startswith("_")]
