"""``Parameter`` and ``Buffer``: Tensor subclasses that ``Module.__setattr__`` registers.

``Parameter(data)`` shares memory (and the version counter) with ``data`` — like PyTorch,
no copy is made — and defaults to ``requires_grad=True``. A global ``data`` (a DTensor) gives
a global parameter with the same layout (``nn.Parameter(distribute_tensor(w, mesh,
[Shard(0)]))``, as PyTorch's DTensor parameters); the distributed layer marks it, through the
op table, since nn sits below it. Ops on a Parameter return plain
Tensors (ops build results with ``_wrap``), so only the leaf itself is a Parameter.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..autograd.dispatch import op
from ..backend import dtypes


class Parameter(Tensor):
    """A Tensor that is a module parameter: ``Parameter(data=None, requires_grad=True)``."""

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = np.empty((0,), dtype=dtypes.get_default_dtype().np)
        if isinstance(data, Tensor):
            super().__init__(data.array, requires_grad=requires_grad)
            self._version = data._version  # same storage, same counter (PyTorch's detach)
            if data._spec is not None:
                op("_parameter_to_global")(self, data)
        else:
            super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.numpy().copy(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.array.copy(), requires_grad=self.requires_grad)
        if self._spec is not None:  # a global parameter's copy keeps its layout
            op("_parameter_to_global")(out, self)
        if self.grad is not None:
            out.grad = Tensor(self.grad.array.copy())
        memo[id(self)] = out
        return out


class Buffer(Tensor):
    """Marks a Tensor to be registered as a buffer when assigned to a Module attribute:
    ``self.x = Buffer(t, persistent=True)``. The module stores a plain Tensor sharing memory."""

    def __init__(self, data=None, *, persistent: bool = True):
        if data is None:
            data = np.empty((0,), dtype=dtypes.get_default_dtype().np)
        super().__init__(data.array if isinstance(data, Tensor) else data)
        self.persistent = persistent


def _rebuild_parameter(array, requires_grad):
    return Parameter(Tensor(array), requires_grad=requires_grad)


def is_lazy(param) -> bool:
    return False


__all__ = ["Parameter", "Buffer"]
