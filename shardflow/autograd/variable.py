"""``torch.autograd.variable`` path: ``Variable``, the pre-0.4 wrapper, kept as torch keeps it.

``Variable(t, requires_grad=False)`` returns a Tensor (not a Variable object): ``t`` detached
(sharing its data) with ``requires_grad`` set; ``isinstance(x, Variable)`` is True for every
Tensor. ``volatile`` was removed in torch 0.4: it warns and has no effect, as in torch.
"""

from __future__ import annotations

import warnings

from .tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
