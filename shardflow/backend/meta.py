"""The meta device: tensors with a shape and a dtype and no data (PyTorch's ``device("meta")``).

What it is for: building a model without allocating it (``with shardflow.device("meta"):
model = Transformer(...)``), laying it out or sharding it, then allocating only what each
rank holds (``model.to_empty(device="cpu")``) and initialising that (``reset_parameters()``),
FSDP2's pattern.

A meta tensor's ``.array`` is a :class:`MetaArray`: shape and dtype only, never any memory of
the tensor's size. It is kept cheap and explicit:

* creation ops with ``device="meta"`` (or under ``with device("meta")``) make one without
  drawing random numbers or allocating; ``tensor.to("meta")`` keeps shape and dtype;
* writes into a meta tensor do nothing (as in PyTorch: there is no data), so the in-place
  ``nn.init`` functions and random fills are no-ops on it — module construction and
  ``reset_parameters()`` work;
* ops whose result shape NumPy's rules give at once compute shapes only: elementwise ufuncs
  (broadcasting, dtype promotion), ``matmul``, reshape/transpose/basic indexing, ``*_like``;
* anything else raises ``NotImplementedError`` naming the NumPy function the op reached and
  the fix (materialise with ``to_empty`` first); reading data (``numpy()``, ``item()``,
  printing values, copying to another device) raises PyTorch's "Cannot copy out of meta
  tensor; no data!".
"""

from __future__ import annotations

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

__all__ = ["MetaArray", "MetaTensorError", "is_meta_array", "meta_namespace", "NO_DATA"]

NO_DATA = (
    "Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() instead "
    "of torch.nn.Module.to() when moving module from meta to a different device."
)


class MetaTensorError(NotImplementedError):
    """An op reached NumPy work a meta tensor cannot do. The op dispatcher adds the op's name
    (``autograd/dispatch.py``: the innermost registered op that was running)."""

    def __init__(self, what: str, op: str | None = None):
        self.what, self.op = what, op
        where = f"op '{op}': " if op else ""
        super().__init__(
            f"{where}{what} on a meta tensor: meta tensors have a shape and dtype but no data, "
            "and shardflow computes shapes on them only for creation, elementwise, reduction, "
            "matmul and reshape/transpose/indexing ops. Materialise first "
            "(module.to_empty(device='cpu') then reset_parameters(), or "
            "shardflow.empty_like(t, device='cpu'))"
        )

    def for_op(self, op: str) -> MetaTensorError:
        return self if self.op else MetaTensorError(self.what, op)


def _unsupported(what: str) -> MetaTensorError:
    return MetaTensorError(what)


def _proxy(a):
    """A zero-stride NumPy view with ``a``'s shape and dtype: shape functions that only make
    views (basic indexing, transpose, expand_dims) run on it without allocating anything."""
    return np.lib.stride_tricks.as_strided(np.zeros((), a.dtype), a.shape, (0,) * len(a.shape),
                                           writeable=False)


class MetaArray(NDArrayOperatorsMixin):
    """Shape and dtype, no data (module docstring). Arithmetic operators go through NumPy's
    ufunc protocol (:meth:`__array_ufunc__`), functions through :meth:`__array_function__`."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    # ---- metadata
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple:
        out, step = [], self.itemsize
        for s in reversed(self.shape):
            out.append(step)
            step *= max(s, 1)
        return tuple(reversed(out))

    class _Flags:
        c_contiguous = contiguous = writeable = owndata = True
        f_contiguous = False

    flags = _Flags()  # a meta array is laid out row-major, as what it stands for will be
    base = None

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return MetaArray(self.shape[::-1], self.dtype)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d meta tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    # ---- data access: there is none
    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(NO_DATA)

    def __float__(self):
        raise NotImplementedError(NO_DATA)

    __int__ = __bool__ = __index__ = __float__

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    item = tolist

    # ---- writes do nothing (no data)
    def __setitem__(self, index, value) -> None:
        return None

    def fill(self, value) -> None:
        return None

    # ---- shape-only methods
    def astype(self, dtype, copy=True, **kwargs):
        return MetaArray(self.shape, dtype)

    def copy(self, order="C"):
        return MetaArray(self.shape, self.dtype)

    def view(self, dtype=None):
        if dtype is None:
            return MetaArray(self.shape, self.dtype)
        dtype = np.dtype(dtype)
        if dtype.itemsize != self.itemsize:
            raise _unsupported(f"view as {dtype} (another item size)")
        return MetaArray(self.shape, dtype)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], list | tuple):
            shape = tuple(shape[0])
        return MetaArray(_reshaped(self.shape, shape), self.dtype)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], list | tuple):
            axes = tuple(axes[0])
        return MetaArray(_proxy(self).transpose(*axes).shape, self.dtype)

    def swapaxes(self, a, b):
        return MetaArray(_proxy(self).swapaxes(a, b).shape, self.dtype)

    def ravel(self, order="C"):
        return MetaArray((self.size,), self.dtype)

    flatten = ravel

    def squeeze(self, axis=None):
        return MetaArray(_proxy(self).squeeze(axis).shape, self.dtype)

    def __getattr__(self, name):
        # An ndarray method with no shape rule here (argsort, cumsum, ...) is found, and
        # raises when called (so the dispatcher can name the op); anything else is missing.
        if not name.startswith("__") and callable(getattr(np.ndarray, name, None)):
            def unsupported(*args, **kwargs):
                raise MetaTensorError(f"ndarray.{name}")

            return unsupported
        raise AttributeError(f"'MetaArray' object has no attribute {name!r}")

    def __getitem__(self, index):
        if _is_basic(index):
            return MetaArray(_proxy(self)[index].shape, self.dtype)
        raise _unsupported("indexing with index arrays")

    # ---- reductions: the shape arithmetic, the dtype of the same reduction of one element
    def _reduce(self, name, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        one = getattr(np.zeros((1,) * max(self.ndim, 1), self.dtype), name)(
            **({} if dtype is None else {"dtype": dtype}))
        return MetaArray(_reduced_shape(self.shape, axis, keepdims), np.asarray(one).dtype)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return self._reduce("sum", axis, dtype, out, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return self._reduce("mean", axis, dtype, out, keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return self._reduce("prod", axis, dtype, out, keepdims)

    def max(self, axis=None, out=None, keepdims=False, **kw):
        return self._reduce("max", axis, None, out, keepdims)

    def min(self, axis=None, out=None, keepdims=False, **kw):
        return self._reduce("min", axis, None, out, keepdims)

    def any(self, axis=None, out=None, keepdims=False, **kw):
        return self._reduce("any", axis, None, out, keepdims)

    def all(self, axis=None, out=None, keepdims=False, **kw):
        return self._reduce("all", axis, None, out, keepdims)

    def argmax(self, axis=None, out=None, keepdims=False):
        return self._reduce("argmax", axis, None, out, keepdims)

    def argmin(self, axis=None, out=None, keepdims=False):
        return self._reduce("argmin", axis, None, out, keepdims)

    # ---- the NumPy protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "reduce" and len(inputs) == 1 and isinstance(inputs[0], MetaArray):
            a = inputs[0]
            one = ufunc.reduce(np.zeros((1,), a.dtype), **({"dtype": kwargs["dtype"]}
                                                           if kwargs.get("dtype") else {}))
            return MetaArray(_reduced_shape(a.shape, kwargs.get("axis", 0),
                                            kwargs.get("keepdims", False)), np.asarray(one).dtype)
        if method != "__call__":
            raise _unsupported(f"numpy.{ufunc.__name__}.{method}")
        # (tensors on two devices never get here: Function.apply refuses them by name; a host
        # array here is an op's own constant, and the result is meta)
        out = kwargs.pop("out", None)
        if ufunc is np.matmul:
            shapes = [_matmul_shape(inputs[0].shape, inputs[1].shape)]
        else:
            shape = np.broadcast_shapes(*[np.shape(x) if not isinstance(x, MetaArray) else x.shape
                                          for x in inputs])
            shapes = [shape] * ufunc.nout
        # the result dtypes: the ufunc on 0-d stand-ins (NumPy's own promotion rules)
        core = (1, 1) if ufunc is np.matmul else ()  # matmul's core dims need two
        zeros = [np.zeros(core, x.dtype) if isinstance(x, MetaArray) else x for x in inputs]
        with np.errstate(all="ignore"):
            res = ufunc(*zeros, **kwargs)
        res = res if isinstance(res, tuple) else (res,)
        outs = tuple(MetaArray(s, np.asarray(r).dtype) for s, r in zip(shapes, res))
        if out is not None:
            return out[0] if len(out) == 1 else out
        return outs[0] if len(outs) == 1 else outs

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise _unsupported(f"numpy.{func.__name__}")
        return handler(*args, **kwargs)


def is_meta_array(a) -> bool:
    return isinstance(a, MetaArray)


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, int | slice | np.integer)
               for i in items)


def _reduced_shape(shape, axis, keepdims):
    nd = len(shape)
    axes = range(nd) if axis is None else (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = {int(a) % max(nd, 1) for a in axes}
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _reshaped(shape, new):
    new = tuple(int(s) for s in new)
    size = int(np.prod(shape, dtype=np.int64))
    if new.count(-1) > 1:
        raise ValueError(f"only one dimension can be inferred, got {new}")
    if -1 in new:
        known = int(np.prod([s for s in new if s != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError(f"shape {new} is invalid for input of size {size}")
        new = tuple(size // known if s == -1 else s for s in new)
    if int(np.prod(new, dtype=np.int64)) != size:
        raise ValueError(f"shape {new} is invalid for input of size {size}")
    return new


def _matmul_shape(a, b):
    if not a or not b:
        raise ValueError("matmul: both arguments need at least one dimension")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: shapes {a} and {b} cannot be multiplied ({a2[-1]} != {b2[-2]})")
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _like(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
    if shape is None:
        shape = a.shape
    return MetaArray(tuple(shape) if np.ndim(shape) else (shape,), a.dtype if dtype is None else dtype)


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like(a, dtype=dtype, shape=shape)


def _copyto(dst, src, **kwargs):
    if not isinstance(dst, MetaArray):
        raise NotImplementedError(NO_DATA)
    return None


def _concat(arrays, axis=0, **kwargs):
    arrays = list(arrays)
    first = arrays[0].shape
    ax = axis % len(first)
    shape = list(first)
    shape[ax] = sum(a.shape[ax] for a in arrays)
    return MetaArray(shape, np.result_type(*[a.dtype for a in arrays]))


def _stack(arrays, axis=0, **kwargs):
    arrays = list(arrays)
    shape = list(arrays[0].shape)
    shape.insert(axis % (len(shape) + 1), len(arrays))
    return MetaArray(shape, np.result_type(*[a.dtype for a in arrays]))


def _einsum(subscripts, *operands, out=None, **kwargs):
    """Explicit-output einsum (``"ij,ij->i"``): sizes from the operands' labels."""
    if "->" not in subscripts or "." in subscripts:
        raise _unsupported(f"numpy.einsum('{subscripts}') (only explicit '->' forms)")
    ins, res = subscripts.replace(" ", "").split("->")
    sizes = {}
    for labels, op in zip(ins.split(","), operands):
        for lab, size in zip(labels, np.shape(op) if not isinstance(op, MetaArray) else op.shape):
            sizes[lab] = size
    dtype = np.result_type(*[op.dtype if isinstance(op, MetaArray) else np.asarray(op).dtype
                             for op in operands])
    result = MetaArray(tuple(sizes[lab] for lab in res), dtype)
    return out if out is not None else result


def _elementwise(*args, out=None, **kwargs):
    """clip / where / around ...: the broadcast shape of the array arguments."""
    arrays = [a for a in args if isinstance(a, MetaArray | np.ndarray)]
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    dtype = np.result_type(*[a.dtype for a in arrays if a.dtype.kind != "b"] or [np.bool_])
    result = MetaArray(shape, dtype)
    return out if out is not None else result


def _where(cond, *xy, **kwargs):
    if not xy:
        raise _unsupported("numpy.where(condition) (its shape depends on the data)")
    result = _elementwise(*xy, **kwargs)
    shape = np.broadcast_shapes(np.shape(cond) if not isinstance(cond, MetaArray) else cond.shape,
                                result.shape)
    return MetaArray(shape, result.dtype)


def _view_fn(name):
    """A NumPy function that only re-views its first argument, run on the zero-stride proxy."""
    fn = getattr(np, name)

    def run(a, *args, **kwargs):
        return MetaArray(fn(_proxy(a), *args, **kwargs).shape, a.dtype)

    return run


_FUNCTIONS = {
    np.empty_like: _like,
    np.zeros_like: _like,
    np.ones_like: _like,
    np.full_like: _full_like,
    np.copyto: _copyto,
    np.concatenate: _concat,
    np.einsum: _einsum,
    np.clip: _elementwise,
    np.where: lambda cond, *xy, **kw: _where(cond, *xy, **kw),
    np.around: _elementwise,
    np.round: _elementwise,
    np.stack: _stack,
    np.reshape: lambda a, shape, *args, **kw: a.reshape(shape),
    np.ascontiguousarray: lambda a, dtype=None, **kw: a.astype(dtype or a.dtype),
    np.shape: lambda a: a.shape,
    np.may_share_memory: lambda a, b, *args, **kw: False,  # no memory to share
    np.shares_memory: lambda a, b, *args, **kw: False,
    np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
}
for _name in ("sum", "mean", "prod", "max", "min", "any", "all", "argmax", "argmin", "amax",
              "amin"):
    _FUNCTIONS[getattr(np, _name)] = (
        lambda a, *args, _m={"amax": "max", "amin": "min"}.get(_name, _name), **kw:
        getattr(a, _m)(*args, **kw))
for _name in ("transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze", "broadcast_to"):
    _FUNCTIONS[getattr(np, _name)] = _view_fn(_name)


class _MetaNamespace:
    """The array module of meta arrays (``get_array_module``, ``new_array(meta, make)``):
    creation without allocation; every other name is NumPy's, whose functions reach meta
    arrays through the dispatch protocols."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def _shape(shape):
        return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)

    def empty(self, shape, dtype=float, **kwargs):
        return MetaArray(self._shape(shape), dtype)

    zeros = ones = empty

    def full(self, shape, fill_value, dtype=None, **kwargs):
        return MetaArray(self._shape(shape), np.result_type(fill_value) if dtype is None else dtype)

    def empty_like(self, a, dtype=None, **kwargs):
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    zeros_like = ones_like = empty_like


meta_namespace = _MetaNamespace()
