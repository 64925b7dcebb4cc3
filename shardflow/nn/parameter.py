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
            self._version_counter = data._version_counter  # same storage, same counter (PyTorch's detach)
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
        # no .grad: torch's Parameter.__deepcopy__ builds a fresh Parameter from the data
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


class _UninitializedTensorMixin:
    """A placeholder whose shape a lazy module learns at its first call (PyTorch's
    ``UninitializedTensorMixin``): it holds no elements, refuses ``shape``, and
    ``materialize(shape)`` turns it, in place (same object), into its ``cls_to_become``."""

    __slots__ = ()
    cls_to_become: type

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the placeholder uninitialised elements of ``shape`` (on its device and dtype
        unless given) and make it a plain ``cls_to_become`` (Parameter / Tensor)."""
        from ..ops.creation import empty

        if device is None:
            device = self.array_device()
        if dtype is None:
            dtype = dtypes.as_dtype(self.array.dtype)
        self.array = empty(*tuple(shape), device=device, dtype=dtype).array
        self._version_counter[0] += 1
        self.__class__ = self.cls_to_become

    def array_device(self):
        from ..backend import device_of

        return device_of(self.array)

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
            "in `load_state_dict` when trying to load an uninitialized parameter into an initialized one. "
            "Call `forward` to initialize the parameters before accessing their attributes.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild_uninitialized, (type(self), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            out = type(self)(requires_grad=self.requires_grad, device=self.array_device(),
                             dtype=dtypes.as_dtype(self.array.dtype))
            memo[id(self)] = out
        return memo[id(self)]


def _rebuild_uninitialized(cls, requires_grad):
    return cls(requires_grad=requires_grad)


def _empty_placeholder(device, dtype):
    from ..ops.creation import empty

    return empty(0, device=device, dtype=dtype)


class UninitializedParameter(_UninitializedTensorMixin, Parameter):
    """A Parameter of unknown shape (lazy modules); ``materialize(shape)`` makes it a Parameter."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        super().__init__(_empty_placeholder(device, dtype), requires_grad=requires_grad)


class UninitializedBuffer(_UninitializedTensorMixin, Tensor):
    """A buffer of unknown shape (lazy modules); ``materialize(shape)`` makes it a Tensor."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None) -> None:
        super().__init__(_empty_placeholder(device, dtype).array, requires_grad=requires_grad)


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialised placeholder of a lazy module."""
    return isinstance(param, _UninitializedTensorMixin)


__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]
