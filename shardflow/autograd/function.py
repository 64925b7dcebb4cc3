"""``Function``: one node of the define-by-run graph (Chainer's function, PyTorch's Node).

A subclass implements ``forward(self, *arrays, **params)`` and ``backward(self, *grads)``
on raw backend arrays — no Tensor is made inside either, which keeps the per-op cost of
the engine near one Python call. ``apply`` wraps them: it unwraps Tensor arguments, runs
``forward``, and when gradients are wanted links the output Tensors to this node.

Graph edges (``next``) point at the *producer* of each input, captured when the op ran:
``(function, output_nr)`` for an intermediate, ``(leaf_tensor, 0)`` for a leaf, ``None``
for an input that needs no gradient. Holding producers rather than tensors is what lets an
in-place op rebase a tensor's history without making a cycle.

Saved-tensor checks: a subclass declares which inputs its backward reads (``save_inputs``,
indices; default all) and whether it reads its output (``save_output``). ``apply`` records
their version counters; the engine refuses to run backward if one changed in between.

What ``backward`` returns: one gradient (or None) per positional argument of ``apply``, each
of that argument's shape; the engine checks both (``engine._check_gradient_count``,
``engine._fit_gradient``) against ``next`` and the producer's recorded output shape
(``_out_shape``, or ``_out_meta`` for several outputs).

State a subclass keeps on ``self`` lives in ``__dict__`` and is dropped by ``release`` after
backward unless ``retain_graph=True``.
"""

from __future__ import annotations

from ..backend import device_of, to_device
from . import grad_mode
from .tensor import Tensor, _wrap


class Function:
    __slots__ = ("next", "_freed", "_pre_hooks", "_saved_versions", "_out_meta", "_out_shape",
                 "__dict__")

    save_inputs: tuple[int, ...] | None = None  # None: every Tensor input may be read
    save_output: bool = False

    needs_input_grad: tuple[bool, ...]

    def forward(self, *arrays, **params):  # pragma: no cover - interface
        raise NotImplementedError

    def backward(self, *grad_outputs):  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **params):
        """Run the op on Tensors (and plain values), recording the graph when needed."""
        fn = cls()
        arrays = []
        edges = []
        need = False
        array_type = None  # NumPy's or CuPy's: a second kind means tensors on two devices
        for a in args:
            if isinstance(a, Tensor):
                arr = a.array
                if array_type is None:
                    array_type = type(arr)
                elif type(arr) is not array_type:
                    arrays = _same_device_arrays(cls, args)
                    return cls.apply(*[_wrap(x) if isinstance(t, Tensor) and x is not t.array else t
                                       for t, x in zip(args, arrays)], **params)
                arrays.append(arr)
                if a.requires_grad:
                    need = True
                    edges.append((a.grad_fn, a._output_nr) if a.grad_fn is not None else (a, 0))
                else:
                    edges.append(None)
            else:
                arrays.append(a)
                edges.append(None)
        if not need or not grad_mode._state.enabled:
            out = fn.forward(*arrays, **params)
            if isinstance(out, tuple):
                return tuple(_wrap(o) for o in out)
            return _wrap(out)

        fn.needs_input_grad = tuple(e is not None for e in edges)
        out = fn.forward(*arrays, **params)
        fn._freed = False
        fn._pre_hooks = None
        fn.next = edges
        saved = cls.save_inputs
        if saved is None:
            fn._saved_versions = [
                (a._version, a._version[0], a.array.shape) for a in args if isinstance(a, Tensor)
            ]
        elif saved:
            fn._saved_versions = [
                (args[i]._version, args[i]._version[0], args[i].array.shape)
                for i in saved
                if isinstance(args[i], Tensor)
            ]
        else:
            fn._saved_versions = None
        if isinstance(out, tuple):
            fn._out_meta = [(o.shape, o.dtype) for o in out]
            outs = tuple(
                _wrap(o, o.dtype.kind == "f" or o.dtype.kind == "V", fn, i) for i, o in enumerate(out)
            )
            if cls.save_output:
                _record_output_versions(fn, outs)
            return outs
        fn._out_meta = None
        fn._out_shape = out.shape  # the engine checks the gradient it receives against it
        t = _wrap(out, True, fn, 0)
        if cls.save_output:
            _record_output_versions(fn, (t,))
        return t

    @classmethod
    def apply_source(cls, arrays, **attrs) -> tuple:
        """Tensors requiring grad for ``arrays``, made by a new node of this class that has
        no inputs: gradients reaching them arrive in its ``backward`` (one per output) and go
        no further in this process. ``attrs`` are set on the node. Distributed autograd's
        receive node uses it (its backward sends the gradients to the worker the tensors came
        from); not on any per-op path."""
        fn = cls()
        fn.__dict__.update(attrs)
        fn._freed = False
        fn._pre_hooks = None
        fn.next = []
        fn._saved_versions = None
        fn.needs_input_grad = ()
        fn._out_meta = [(a.shape, a.dtype) for a in arrays]
        return tuple(_wrap(a, True, fn, i) for i, a in enumerate(arrays))

    def release(self) -> None:
        """Free what forward saved; a second backward through this node then fails clearly."""
        self.__dict__.clear()
        self._freed = True

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()}>"


def _record_output_versions(fn: Function, outs) -> None:
    extra = [(t._version, t._version[0], t.array.shape) for t in outs]
    fn._saved_versions = extra if fn._saved_versions is None else fn._saved_versions + extra


def _same_device_arrays(cls, args) -> list:
    """The arrays of ``args`` when their tensors are on two devices: a 0-d CPU tensor that
    needs no gradient is a number to PyTorch and moves to the others' device; anything else
    raises PyTorch's error, naming the op and the fix."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    devices = {}
    for t in tensors:
        devices.setdefault(str(device_of(t.array)), t)
    main = next((d for d in devices if d != "cpu"), "cpu")
    arrays = []
    for a in args:
        if not isinstance(a, Tensor):
            arrays.append(a)
            continue
        dev = device_of(a.array)
        if str(dev) == main:
            arrays.append(a.array)
        elif dev.type == "cpu" and a.array.ndim == 0 and not a.requires_grad:
            arrays.append(to_device(a.array, device_of(devices[main].array)))
        else:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, "
                f"{main} and {dev}! (in {cls.__name__}); move them to one device with "
                f".to({main!r}) before the op"
            )
    return arrays
