"""``Tensor``: a backend array (``.array``) plus what autograd needs to know about it.

Fields: ``array`` (NumPy or CuPy array), ``requires_grad``, ``grad``, ``grad_fn`` (the
Function that produced it; None for leaves), ``_output_nr`` (which output of grad_fn),
``_version_counter`` (a one-element list shared with views, bumped by in-place ops; the
property ``_version`` reads it as an int, as PyTorch's ``t._version``), leaf tensor
hooks and post-accumulate-grad hooks.

``.data`` follows PyTorch: a Tensor sharing the same memory, detached from the graph, with a
fresh version counter (so ``p.data.normal_()`` and ``p.data.copy_(q)`` work and autograd does
not see them). The raw array is ``.array``.

Methods are thin: they look the op up in the dispatch table (``dispatch.OPS``) that the
``ops`` package fills, so this layer never imports upward.

In-place ops (``add_``, ``x += y``, ``x[i] = v``): with no graph to record they write into
the array; when the graph must record them, they run out of place and rebind the tensor
to the result, taking its ``grad_fn`` (PyTorch's history rebase). Either way the version
counter moves, so a tensor saved for backward and changed afterwards is caught.
"""

from __future__ import annotations

import numbers
import sys
import warnings

import numpy as np

from ..backend import CPU, as_dtype, device_of, dtypes, from_numpy_dtype, is_device_array, to_device
from ..backend import shared_memory as shm
from ..backend import storage as _storage
from ..backend.layout import strided
from ..backend.memory_format import check_memory_format, in_memory_format
from ..backend.meta import MetaArray
from ..backend.user_warning import first_time, warn_at_caller
from . import _tensor_str, grad_mode, legacy_types, sequence_data
from .dispatch import OPS, set_method_owner
from .hook_ids import next_handle_id
from .rebind import record as _rebind_record
from .removable_handle import RemovableHandle
from .tensor_compat_methods import TensorCompatMethods


def _read_only_error(t) -> RuntimeError:
    """PyTorch's error for writing through a view whose elements share memory (``expand``,
    ``broadcast_to``: NumPy marks those read-only), instead of NumPy's ValueError."""
    return RuntimeError(
        f"unsupported operation: more than one element of the written-to tensor (shape "
        f"{tuple(t.shape)}) refers to a single memory location. Please clone() the tensor before "
        "performing the operation.")

_SAME_DTYPE = object()  # grad_dtype not set: the tensor's own dtype


def _wrap(array, requires_grad=False, grad_fn=None, output_nr=0, version=None):
    """Make a Tensor around ``array`` without any checks (the engine's fast path)."""
    if type(array) is not np.ndarray and isinstance(array, np.generic):
        array = np.asarray(array)  # NumPy ufuncs on 0-d arrays return scalars
    t = object.__new__(Tensor)
    t.array = array
    t.requires_grad = requires_grad
    t._grad = None
    t.grad_fn = grad_fn if requires_grad else None
    t._output_nr = output_nr
    t._version_counter = [0] if version is None else version
    t._hooks = None
    t._post_hooks = None
    t._spec = None
    return t


class Size(tuple):
    """``tensor.shape``: a tuple, printed like PyTorch's ``torch.Size``."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"shardflow.Size({list(self)})"

    # slicing, concatenating and repeating give a Size, as torch.Size's (``x.shape[1:]``
    # prints ``torch.Size([3])``, not ``(3,)``); an int index stays tuple's own (C) lookup
    def __getitem__(self, index):
        got = tuple.__getitem__(self, index)
        return Size(got) if isinstance(index, slice) else got

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__


def _keyword_form(op: str, args: tuple, value, name: str) -> tuple:
    """The varargs of a shape method, or torch's keyword form ``name=value``
    (``x.view(size=(2, 3))``, ``x.permute(dims=(1, 0))``)."""
    if value is None:
        return args
    if args:
        raise TypeError(f"{op}() got {name} both positionally and as {name}=; pass one")
    return (value,)



# what `tensor == x` does not compare elementwise: torch's `__eq__` takes tensors and numbers
# only, so Python falls back to identity (``t == None`` is False, ``t != [1, 2]`` True)
_NOT_COMPARED = (list, tuple, str, dict, set)


def _warn_T_once(ndim: int) -> None:
    """torch's once-per-process deprecation warnings of ``x.T`` on a tensor not 2-D."""
    if not first_time("T_0d" if ndim == 0 else "T_nd"):
        return
    if ndim == 0:
        msg = "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."
    else:
        msg = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
               "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
               "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.")
    warnings.warn(msg, UserWarning, stacklevel=3)

class Tensor(TensorCompatMethods):
    __slots__ = (
        "array", "requires_grad", "_grad", "grad_fn", "_output_nr", "_version_counter", "_hooks",
        "_post_hooks", "_spec", "__dict__", "__weakref__",
    )

    __array_priority__ = 1000  # numpy scalars/arrays defer to our reflected operators
    # the public name, as torch's (torch.Tensor.__module__ is "torch"): print(type(x)) reads
    # <class 'shardflow.Tensor'>; pickles and RPC find the class there too
    __module__ = "shardflow"

    # PyTorch's ``t._base``: the tensor whose memory this view shares (set by the view ops,
    # ``ops.shape._share``), None for a tensor that owns its memory
    _base = None

    def __init__(self, data=None, *sizes, dtype=None, requires_grad: bool = False):
        if data is None:
            data = np.empty((0,), dtype=np.float32)
        elif sizes or type(data) is int or type(data) is Size:  # torch.Tensor(2, 3): sizes
            data = legacy_types.uninitialized(data, sizes, dtype)
        elif dtype is None and type(data) in (list, tuple):
            dtype = dtypes.get_default_dtype()  # torch.Tensor([1, 2]) is a float tensor
        elif dtype is None and isinstance(data, np.ndarray) and not _called_by_shardflow():
            data, dtype = legacy_types.user_array(data)  # torch.Tensor(ndarray): default dtype
        arr = _as_array(data, dtype)
        self.array = arr
        self.requires_grad = bool(requires_grad)
        self._grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._version_counter = [0]
        self._hooks = None
        self._post_hooks = None
        self._spec = None
        if requires_grad and not _is_differentiable(arr):
            raise RuntimeError(
                f"only floating point and complex tensors can require gradients, got dtype "
                f"{self.dtype}; create it with dtype=shardflow.float32"
            )

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        # A global tensor's shape is its logical shape; .array holds this rank's shard.
        return Size(self.array.shape if self._spec is None else self._spec.shape)

    def size(self, dim: int | None = None):
        shape = self.array.shape if self._spec is None else self._spec.shape
        if dim is None:
            return Size(shape)
        return shape[_wrap_dim(dim, self.array.ndim)]

    # Global tensors (placement + sbp): ``_spec`` is None for a local tensor; the
    # distributed layer sets it (an object with ``placement``, ``sbp`` and ``shape``).
    @property
    def is_global(self) -> bool:
        return self._spec is not None

    is_consistent = is_global  # OneFlow's older name

    @property
    def is_local(self) -> bool:
        return self._spec is None

    @property
    def placement(self):
        if self._spec is None:
            raise RuntimeError(
                "placement is defined for global tensors only; make one with "
                "tensor.to_global(placement, sbp)"
            )
        return self._spec.placement

    @property
    def sbp(self):
        if self._spec is None:
            raise RuntimeError(
                "sbp is defined for global tensors only; make one with tensor.to_global(placement, sbp)"
            )
        return self._spec.sbp

    # PyTorch's DTensor names for the same two things. A local tensor has neither: the
    # AttributeError keeps ``hasattr(t, "placements")`` False for it, as for a plain torch.Tensor.
    @property
    def device_mesh(self):
        if self._spec is None:
            raise AttributeError("device_mesh is defined for global tensors (DTensors) only")
        return self._spec.placement

    @property
    def placements(self):
        if self._spec is None:
            raise AttributeError("placements is defined for global tensors (DTensors) only")
        return self._spec.sbp

    @property
    def dtype(self):
        return from_numpy_dtype(self.array.dtype)

    @property
    def device(self):
        return device_of(self.array)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    # Device kinds and layouts shardflow never makes (PyTorch code branches on them).
    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_xpu(self) -> bool:
        return False

    @property
    def is_mps(self) -> bool:
        return False

    # PyTorch's other backends' flags: always False here
    is_xla = is_ipu = is_maia = is_mtia = is_vulkan = is_mkldnn = is_sparse_csr = is_mps

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    @property
    def is_sparse(self) -> bool:
        return False  # a sparse COO tensor is ops/sparse_coo.SparseTensor

    @property
    def layout(self):
        return strided

    @property
    def is_quantized(self) -> bool:
        return False

    @property
    def is_nested(self) -> bool:
        return False

    def is_complex(self) -> bool:
        return self.array.dtype.kind == "c"

    @property
    def ndim(self) -> int:
        return self.array.ndim

    def dim(self) -> int:
        return self.array.ndim

    def ndimension(self) -> int:
        return self.array.ndim

    def numel(self) -> int:
        if self._spec is not None:
            return Size(self._spec.shape).numel()
        return int(self.array.size)

    nelement = numel

    def element_size(self) -> int:
        return self.array.itemsize

    @property
    def itemsize(self) -> int:
        return self.array.itemsize

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def is_inference(self) -> bool:
        """Whether an op made this tensor inside ``inference_mode`` (grad_mode.py)."""
        return getattr(self, "_sf_inference", False)

    @property
    def name(self):
        """torch's named-tensor dimension name of a tensor: shardflow has no named tensors (None)."""
        return None

    @property
    def volatile(self) -> bool:
        """Removed in torch 0.4: always False, with torch's warning."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    @property
    def grad(self):
        """The gradient accumulated into this leaf by backward (None before any). Reading it
        on a non-leaf that does not retain its gradient warns, as PyTorch (the classic
        mistake: ``(w * 1).grad`` or a parameter moved with ``.to()`` after requires_grad)."""
        g = self._grad
        if g is None and self.grad_fn is not None and self.requires_grad and not self.retains_grad:
            warn_at_caller(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you "
                "access the leaf Tensor instead.")
        return g

    @grad.setter
    def grad(self, value) -> None:
        # PyTorch refuses anything but a Tensor or None here (``a.grad = 0.`` is a TypeError
        # there, not a silently stored float that a later ``a -= lr * a.grad`` would use)
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(
                f"assigned grad expected to be a Tensor or None but got grad of type "
                f"{type(value).__name__}; assign a tensor (e.g. torch.zeros_like(param)) or None")
        if value is not None and not value.is_sparse and not self.is_sparse and self._spec is None \
                and value._spec is None and value.array.shape != self.array.shape:
            # PyTorch refuses it too: a gradient of another shape would broadcast silently in
            # the optimizer's update (or fail far from here)
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                "the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None  # ``del p.grad`` leaves None, as in PyTorch

    @property
    def grad_dtype(self):
        """The dtype ``.grad`` is kept in (default: this tensor's; None: whatever arrives);
        the engine casts a leaf's incoming gradient to it."""
        want = getattr(self, "_sf_grad_dtype", _SAME_DTYPE)
        return self.dtype if want is _SAME_DTYPE else want

    @grad_dtype.setter
    def grad_dtype(self, value) -> None:
        self._sf_grad_dtype = None if value is None else as_dtype(value)

    def is_floating_point(self) -> bool:
        return _is_float(self.array)

    def is_contiguous(self, memory_format=None) -> bool:
        """Row-major contiguity; with ``memory_format=channels_last`` (4-d) or
        ``channels_last_3d`` (5-d), whether the array is laid out channels-last."""
        name = getattr(memory_format, "name", "contiguous_format")
        if name in ("channels_last", "channels_last_3d"):
            a = self.array
            if a.ndim != (4 if name == "channels_last" else 5):
                return False
            return bool(a.transpose(0, *range(2, a.ndim), 1).flags.c_contiguous)
        return bool(self.array.flags.c_contiguous)

    def stride(self, dim: int | None = None):
        """Strides in elements. A size-1 dim that NumPy strides 0 (an axis added by ``None``
        indexing or ``unsqueeze`` of a broadcast, a size-1 dim kept by ``expand``: NumPy
        zeroes every size-1 axis of ``broadcast_to``) reports torch's stride instead, the
        next dim's ``size * stride`` (1 for the last dim): torch's rule for an inserted dim,
        and what a kept size-1 dim of a row-major tensor already had. Its index is always 0,
        so no element moves; ``dim_order()`` and printed strides then read as torch's."""
        a = self.array
        st = tuple(s // a.itemsize for s in a.strides)
        if 0 in st and 1 in a.shape:
            st = _size_one_strides(st, a.shape)
        return st if dim is None else st[_wrap_dim(dim, a.ndim)]

    def data_ptr(self) -> int:
        return int(self.array.__array_interface__["data"][0]) if isinstance(self.array, np.ndarray) else int(self.array.data.ptr)

    @property
    def data(self) -> Tensor:
        """The same memory, detached, with a version counter of its own, as PyTorch's ``.data``:
        an in-place change through it is not seen by autograd (``detach()`` shares the counter,
        so autograd refuses a backward that would read a value changed through it)."""
        t = _wrap(self.array)
        t._spec = self._spec
        return t

    @data.setter
    def data(self, value) -> None:
        """Binds the new values; graphs that saved this tensor read them in their backward,
        as PyTorch's storage swap makes them do (``rebind.py``)."""
        old = self.array
        self.array = value.array if isinstance(value, Tensor) else _as_array(value, None)
        _rebind_record(old, self.array)

    @property
    def T(self) -> Tensor:
        if self.array.ndim != 2:
            _warn_T_once(self.array.ndim)
        return OPS["permute"](self, tuple(range(self.array.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:
        return OPS["transpose"](self, -2, -1)

    # -- PyTorch metadata properties from the torch-namespace gap list (docs/COMPAT.md) --
    @property
    def H(self) -> Tensor:
        """Conjugate transpose of a matrix (real dtypes: the transpose)."""
        if self.array.ndim not in (0, 2):
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.array.ndim}-D tensor.")
        return self.T.conj() if self.dtype.is_complex else self.T

    @property
    def mH(self) -> Tensor:
        """Conjugate transpose of the last two dims (real dtypes: ``mT``)."""
        return self.mT.conj() if self.dtype.is_complex else self.mT

    @property
    def output_nr(self) -> int:
        """Which output of ``grad_fn`` this tensor is."""
        return self._output_nr

    # ------------------------------------------------------------------ conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The array on the CPU (shares memory when the tensor is on the CPU).

        For a global tensor: the whole logical tensor, gathered on every rank (a collective
        that every rank of its placement must call, as ``print(tensor)`` does)."""
        if self._spec is not None:
            return OPS["_global_to_numpy"](self)
        if isinstance(self.array, np.ndarray):
            return self.array
        return to_device(self.array, CPU)

    def item(self):
        if self._spec is not None:
            return self.numpy().reshape(()).item()
        if self.array.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.array.size} elements cannot be converted to a Python "
                "scalar; index it first or use .tolist()"
            )
        return self.array.reshape(()).item() if self.array.dtype.kind != "V" else float(self.array.reshape(()))

    def tolist(self):
        a = self.numpy()
        if a.dtype.kind == "V":  # bfloat16
            a = a.astype(np.float32)
        return a.tolist()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc applied to a tensor (``np.exp(loss)``, ``np.sqrt(t)``) gives a tensor
        on the CPU, as in PyTorch, not an array; a boolean result comes back as uint8, as
        PyTorch's does (its own workaround, kept for the same printout). ``return_scalar``
        (NumPy 2) is not honoured on purpose: PyTorch gives a 0-d tensor there too."""
        array = np.asarray(array)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return _wrap(array)

    def __float__(self):
        self._check_one_element()
        self._warn_scalar_of_graph()
        return float(self.item())

    def __complex__(self):
        self._check_one_element()
        self._warn_scalar_of_graph()
        return complex(self.item())

    def _warn_scalar_of_graph(self) -> None:
        """PyTorch's warning for ``float(t)`` / ``complex(t)`` of a tensor that requires grad,
        with grad mode on, once per process as its ``TORCH_WARN_ONCE`` (``.item()``, ``int()``
        and ``bool()`` do not warn there either)."""
        if self.requires_grad and grad_mode.is_grad_enabled() and first_time("scalar_of_graph"):
            warn_at_caller("Converting a tensor with requires_grad=True to a scalar may lead to "
                           "unexpected behavior.\nConsider using tensor.detach() first.")

    def __int__(self):
        self._check_one_element()
        return int(self.item())

    def _check_one_element(self) -> None:
        if self.array.size != 1:  # PyTorch's ValueError (``item()`` raises a RuntimeError)
            raise ValueError(f"only one element tensors can be converted to Python scalars (this one has "
                             f"{self.array.size} elements, shape {tuple(self.array.shape)}); index it or "
                             "reduce it first, e.g. float(t.sum()) or float(t[0])")

    def __bool__(self):
        if self.array.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self.array.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.array.reshape(()))

    def __index__(self):
        if self.array.dtype.kind not in "iub" or self.array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self):
        if self.array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __iter__(self):
        if self.array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.array.shape[0]))

    # Identity hashing (``__eq__`` is elementwise, so Python would drop the inherited hash).
    # object's own slot, not a Python ``def``: the backward engine keys its dicts by leaf
    # tensors, and a Python-level __hash__ costs a frame per lookup.
    __hash__ = object.__hash__

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.numpy().copy(), self.requires_grad))

    def __deepcopy__(self, memo):
        """torch's rules (``autograd/tensor_deepcopy.py``): a leaf only; the copy keeps the
        device, dtype, ``requires_grad``, ``.grad`` and attributes. A global tensor is copied
        as before, through pickling (its whole value, gathered)."""
        if self._spec is not None:
            return _rebuild(self.numpy().copy(), self.requires_grad)
        from .tensor_deepcopy import deepcopy_tensor

        return deepcopy_tensor(self, memo)

    # ------------------------------------------------------------------ shared memory
    def share_memory_(self) -> Tensor:
        """Move this tensor's elements into shared memory, in place (PyTorch's
        ``share_memory_``); a no-op when they are there already. The same Tensor then views
        a shared-memory segment (``backend/shared_memory.py``), so ``.data``, views taken
        afterwards and the in-place updates of processes it is sent to
        (``shardflow.multiprocessing``) all use the same memory. Views taken *before* keep
        the old memory (PyTorch moves the whole storage; here the tensor's array is moved).
        CUDA tensors are refused: PyTorch shares them through CUDA IPC, which shardflow does
        not implement."""
        if self._spec is not None:
            raise RuntimeError(
                "share_memory_() works on local tensors; a global tensor's shard belongs to its "
                "rank's process. Share t.to_local() instead, or train data-parallel with "
                "`shardflow run -n N`")
        if not isinstance(self.array, np.ndarray):
            raise RuntimeError(
                f"share_memory_() of a {self.device} tensor: shardflow shares CPU tensors only "
                "(PyTorch shares CUDA tensors through CUDA IPC, which shardflow does not "
                "implement). Keep the shared model on the CPU (Hogwild), or use `shardflow run "
                "-n N` for multi-GPU data-parallel training")
        with shm.lock:
            if not shm.is_shared(self.array):
                (self.array,) = shm.share_arrays([self.array])
        return self

    def is_shared(self) -> bool:
        """True when the tensor's elements are in shared memory (``share_memory_()``, or
        received through ``shardflow.multiprocessing``)."""
        return self._spec is None and shm.is_shared(self.array)

    def to(self, *args, **kwargs) -> Tensor:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)  # transfers are synchronous: the result is the same
        copy = kwargs.pop("copy", False)
        memory_format = kwargs.pop("memory_format", None)
        if memory_format is not None:
            check_memory_format("to", memory_format, self.ndim)
        if "tensor" in kwargs:  # to(tensor=t): t's dtype and device, as torch's third overload
            args = (*args, kwargs.pop("tensor"))
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}' "
                            "(it takes device, dtype, tensor, non_blocking, copy, memory_format)")
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, dtypes.dtype) or a in (float, int, bool, complex):
                dtype = a
            elif isinstance(a, np.dtype) or (isinstance(a, type) and issubclass(a, np.generic)):
                dtype = a
            elif a is not None:
                device = a
        out = self
        if device is not None:
            from ..backend import device as _device

            dev = _device(device)
            if dev != self.device:
                out = OPS["_to_device"](out, dev)
        if dtype is not None:
            out = OPS["_to_dtype"](out, as_dtype(dtype))
        if memory_format is not None and memory_format.name != "preserve_format" \
                and in_memory_format(out.array, memory_format) is not out.array:
            out = OPS["clone"](out, memory_format=memory_format)  # the layout asked for (backend/memory_format.py)
        if copy and out is self:
            out = self.clone()
        return out

    def type(self, dtype=None, non_blocking: bool = False):
        """PyTorch's ``x.type()`` string (``'torch.FloatTensor'``), or a copy converted to a
        dtype / legacy type / type name (``legacy_types.py``)."""
        if dtype is None:
            return legacy_types.tensor_type_name(self)
        dt, dev = legacy_types.resolve_tensor_type(dtype)
        return self.to(dt) if dev is None else self.to(dev, dt)

    def float(self, memory_format=None):
        return self.to(dtypes.float32, memory_format=memory_format)

    def double(self, memory_format=None):
        return self.to(dtypes.float64, memory_format=memory_format)

    def half(self, memory_format=None):
        return self.to(dtypes.float16, memory_format=memory_format)

    def bfloat16(self, memory_format=None):
        return self.to(dtypes.bfloat16, memory_format=memory_format)

    def long(self, memory_format=None):
        return self.to(dtypes.int64, memory_format=memory_format)

    def int(self, memory_format=None):
        return self.to(dtypes.int32, memory_format=memory_format)

    def short(self, memory_format=None):
        return self.to(dtypes.int16, memory_format=memory_format)

    def char(self, memory_format=None):
        return self.to(dtypes.int8, memory_format=memory_format)

    def byte(self, memory_format=None):
        return self.to(dtypes.uint8, memory_format=memory_format)

    def bool(self, memory_format=None):
        return self.to(dtypes.bool_, memory_format=memory_format)

    # -------------------------------------------------------------- complex (ops/complex_ops.py)
    def cfloat(self, memory_format=None):
        return self.to(dtypes.complex64, memory_format=memory_format)

    def cdouble(self, memory_format=None):
        return self.to(dtypes.complex128, memory_format=memory_format)

    @property
    def real(self) -> Tensor:
        """The real part (PyTorch: a view; the tensor itself for a real tensor)."""
        return OPS["real"](self)

    @property
    def imag(self) -> Tensor:
        """The imaginary part of a complex tensor (PyTorch raises for a real one)."""
        return OPS["imag"](self)

    def cpu(self, memory_format=None):
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None):
        return self.to("cuda" if device is None else f"cuda:{int(device)}", non_blocking=non_blocking,
                       memory_format=memory_format)

    def type_as(self, other):
        return self.to(other.dtype)

    # ------------------------------------------------------------------ autograd
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and not _is_differentiable(self.array):
            raise RuntimeError(
                f"only floating point and complex tensors can require gradients, got dtype {self.dtype}"
            )
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables; use .detach() for "
                "a non-leaf tensor"
            )
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        t = _wrap(self.array, version=self._version_counter)
        t._spec = self._spec
        return t

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self.requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False, inputs=None):
        from .api import backward

        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Call ``hook(grad) -> Tensor | None`` when this tensor's gradient is computed."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            fn = self.grad_fn
            if fn._pre_hooks is None:
                fn._pre_hooks = {}
            hooks = fn._pre_hooks.setdefault(self._output_nr, [])
        if hooks and getattr(hooks[-1], "_retains_grad", False):
            hooks.insert(len(hooks) - 1, hook)  # retain_grad's hook stays last, as in PyTorch
        else:
            hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a leaf's ``.grad`` received this backward's gradient."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return _RemovableHandle(self._post_hooks, hook)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after backward (a no-op on a leaf,
        which keeps its own). A tensor that does not require grad never gets one: torch's
        RuntimeError, as here."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False "
                               "(no gradient is ever computed for it: call requires_grad_() on it, "
                               "or on an input it is computed from, first)")
        if self.grad_fn is None:
            return
        if getattr(self, "_retains", False):
            return
        self.__dict__["_retains"] = True

        def _keep(g, t=self):
            t.grad = g if t.grad is None else _wrap(t.grad.array + g.array)

        # PyTorch runs the retains-grad hook after every other tensor hook, whenever they were
        # registered, so ``.grad`` holds the gradient the hooks made (register_hook keeps it last)
        _keep._retains_grad = True
        self.register_hook(_keep)

    @property
    def retains_grad(self) -> bool:
        return bool(self.__dict__.get("_retains", False))

    # ------------------------------------------------------------------ in place
    def _check_inplace_allowed(self, op: str = "an in-place operation") -> None:
        """PyTorch's rule: a leaf that requires grad may change in place only under no_grad.
        Every in-place path calls this before writing, so a refused op changes nothing."""
        if self.requires_grad and self.grad_fn is None and grad_mode._state.enabled:
            raise RuntimeError(
                f"a leaf Variable that requires grad (shape {tuple(self.shape)}) is being used in "
                f"{op}; wrap the update in `with shardflow.no_grad():` or use an out-of-place op"
            )
        alias_of = getattr(self.grad_fn, "outputs_alias_inputs", None)
        if alias_of is not None and grad_mode._state.enabled:
            # torch's rule for a node that returns its inputs as they are (the full backward
            # hooks' identity node): rebasing such an output onto the in-place op would bypass
            # the node's backward (the hooks), so the write is refused
            raise RuntimeError(
                f"Output {self._output_nr} of {alias_of} is a view and is being modified inplace. "
                "This view was created inside a custom Function (or because an input was returned "
                "as-is) and the autograd logic to handle view+inplace would override the custom "
                "backward associated with the custom Function, leading to incorrect gradients. This "
                "behavior is forbidden. You can fix this by cloning the output of the custom Function "
                "(for a module with a full backward hook: use ReLU(inplace=False), or .clone() the "
                "tensor before changing it in place).")

    def _inplace(self, result: Tensor) -> Tensor:
        """Make ``self`` hold ``result``: write in place when no graph is recorded, else rebase."""
        if result.requires_grad:
            self._check_inplace_allowed()
            if self._base is not None and self._spec is None:
                from .view_inplace import inplace_on_view  # (rare: a view changed in place)

                if inplace_on_view(self, result):
                    return self
            if not self.requires_grad and self._inplace_write_through(result):
                return self
            # Rebase: the old array is left untouched (functions that saved it stay valid), so
            # the tensor moves to the result's version counter instead of bumping the shared
            # one: an op that saved the result (sqrt_, exp_ save their output) must see a
            # later in-place write into this array.
            self.array = result.array
            self.grad_fn = result.grad_fn
            self._output_nr = result._output_nr
            self.requires_grad = True
            self._version_counter = result._version_counter
            return self
        else:
            src = result.array
            if src.shape != self.array.shape:
                src = np.broadcast_to(src, self.array.shape) if isinstance(src, np.ndarray) else src
            if self.array.dtype != src.dtype:
                _check_inplace_cast(src.dtype, self.array.dtype)
                src = src.astype(self.array.dtype)
            try:
                self.array[...] = src
            except ValueError:  # (checked only on failure: no cost on the usual path)
                if isinstance(self.array, np.ndarray) and not self.array.flags.writeable:
                    raise _read_only_error(self) from None
                raise
        self._version_counter[0] += 1
        return self

    def _inplace_write_through(self, result: Tensor) -> bool:
        """A recorded in-place op on a tensor that had no graph (``p.data.copy_(q)`` with
        ``q`` requiring grad, ``t.detach().mul_(w)``): other tensors may share its memory
        (the parameter behind ``.data``, the tensor behind ``detach()``) and must see the
        new values, as torch writes in place. So the values go into this tensor's own memory
        (its shared version counter bumped: an op that saved the old value refuses its
        backward, as torch's) and only the graph comes from ``result``. False (the caller
        rebases) when the memory cannot take them (another device, dtype or shape)."""
        dst, src = self.array, result.array
        if (type(dst) is not np.ndarray or type(src) is not np.ndarray or self._spec is not None
                or dst.shape != src.shape or dst.dtype != src.dtype or not dst.flags.writeable):
            return False
        dst[...] = src
        self._version_counter[0] += 1
        self.grad_fn = result.grad_fn
        self._output_nr = result._output_nr
        self.requires_grad = True
        return True

    def _bump_version(self) -> None:
        self._version_counter[0] += 1

    @property
    def _version(self) -> int:
        """PyTorch's ``t._version``: in-place changes to this tensor's memory so far (through it
        or any view sharing its counter), an int, so ``v = t._version`` keeps the value (the
        counter itself is the shared list ``_version_counter``)."""
        return self._version_counter[0]

    # ------------------------------------------------------------------ repr
    def __repr__(self) -> str:
        # PyTorch's format (autograd/_tensor_str.py): tensor(1.5000), tensor([1., 2.]) ...
        return _tensor_str.tensor_repr(self, dtypes.get_default_dtype(),
                                       (dtypes.int64, dtypes.bool_, dtypes.get_default_complex_dtype()))

    def __format__(self, format_spec: str) -> str:
        # PyTorch: a 0-d tensor formats like its Python number (f"{loss:.4f}", and f"{t}"
        # gives "10.0", not "tensor(10.)"); any other tensor formats as str() and refuses a
        # non-empty spec (object.__format__'s TypeError). Subclasses (Parameter) too. A global
        # tensor uses its logical shape (item() then gathers, as print() does).
        if type(self) is Tensor and len(self.shape) == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    __str__ = __repr__

    # ------------------------------------------------------------------ operators
    # __add__, __sub__, __mul__, __truediv__, __matmul__: set by dispatch (_OPERATORS, below)
    def __radd__(self, other):
        return OPS["add"](other, self)

    def __iadd__(self, other):
        return OPS["add_"](self, other)

    def __rsub__(self, other):
        return OPS["sub"](other, self)

    def __isub__(self, other):
        return OPS["sub_"](self, other)

    def __rmul__(self, other):
        return OPS["mul"](other, self)

    def __imul__(self, other):
        return OPS["mul_"](self, other)

    def __rtruediv__(self, other):
        return OPS["div"](other, self)

    def __itruediv__(self, other):
        return OPS["div_"](self, other)

    def __floordiv__(self, other):
        try:
            return OPS["floor_divide"](self, other)
        except TypeError:  # another type's reflected method may take it (see _foreign)
            if _foreign(other):
                return NotImplemented
            raise

    def __rfloordiv__(self, other):
        return OPS["floor_divide"](other, self)

    def __mod__(self, other):
        try:
            return OPS["remainder"](self, other)
        except TypeError:  # another type's reflected method may take it (see _foreign)
            if _foreign(other):
                return NotImplemented
            raise

    def __rmod__(self, other):
        return OPS["remainder"](other, self)

    def __pow__(self, other):
        try:
            return OPS["pow"](self, other)
        except TypeError:  # another type's reflected method may take it (see _foreign)
            if _foreign(other):
                return NotImplemented
            raise

    def __rpow__(self, other):
        return OPS["pow"](other, self)

    def __ipow__(self, other):
        return OPS["pow_"](self, other)

    def __rmatmul__(self, other):
        return OPS["matmul"](other, self)

    def __neg__(self):
        return OPS["neg"](self)

    def __pos__(self):
        return self

    def __abs__(self):
        return OPS["abs"](self)

    def __invert__(self):
        return OPS["bitwise_not"](self)

    def __and__(self, other):
        return OPS["bitwise_and"](self, other)

    def __rand__(self, other):
        return OPS["bitwise_and"](other, self)

    def __or__(self, other):
        return OPS["bitwise_or"](self, other)

    def __ror__(self, other):
        return OPS["bitwise_or"](other, self)

    def __xor__(self, other):
        return OPS["bitwise_xor"](self, other)

    def __rxor__(self, other):
        return OPS["bitwise_xor"](other, self)

    def __iand__(self, other):
        return OPS["bitwise_and_"](self, other)

    def __ior__(self, other):
        return OPS["bitwise_or_"](self, other)

    def __ixor__(self, other):
        return OPS["bitwise_xor_"](self, other)

    def __lshift__(self, other):
        return OPS["bitwise_left_shift"](self, other)

    def __rlshift__(self, other):
        return OPS["bitwise_left_shift"](other, self)

    def __ilshift__(self, other):
        return OPS["bitwise_left_shift_"](self, other)

    def __rshift__(self, other):
        return OPS["bitwise_right_shift"](self, other)

    def __rrshift__(self, other):
        return OPS["bitwise_right_shift"](other, self)

    def __irshift__(self, other):
        return OPS["bitwise_right_shift_"](self, other)

    def __eq__(self, other):
        if other is None or isinstance(other, _NOT_COMPARED):
            return NotImplemented  # torch: `t == None`, `t == [1, 2]` are False (Python's identity)
        return OPS["eq"](self, other)

    def __ne__(self, other):
        if other is None or isinstance(other, _NOT_COMPARED):
            return NotImplemented
        return OPS["ne"](self, other)

    def __lt__(self, other):
        return OPS["lt"](self, other)

    def __le__(self, other):
        return OPS["le"](self, other)

    def __gt__(self, other):
        return OPS["gt"](self, other)

    def __ge__(self, other):
        return OPS["ge"](self, other)

    def __getitem__(self, index):
        return OPS["getitem"](self, index)

    def __setitem__(self, index, value):
        OPS["setitem_"](self, index, value)

    # ------------------------------------------------------------------ methods
    # Each forwards to the functional op of the same PyTorch name (see shardflow.ops).
    def add(self, other, *deprecated, alpha=1):  # *deprecated: torch's (add(alpha, other))
        return OPS["add"](self, other, *deprecated, alpha=alpha)

    def add_(self, other, *deprecated, alpha=1):  # *deprecated: torch's (add_(alpha, other))
        return OPS["add_"](self, other, *deprecated, alpha=alpha)

    def sub(self, other, *deprecated, alpha=1):  # *deprecated: torch's (sub(alpha, other))
        return OPS["sub"](self, other, *deprecated, alpha=alpha)

    def sub_(self, other, *deprecated, alpha=1):  # *deprecated: torch's (sub_(alpha, other))
        return OPS["sub_"](self, other, *deprecated, alpha=alpha)

    def mul(self, other):
        return OPS["mul"](self, other)

    def mul_(self, other):
        return OPS["mul_"](self, other)

    def div(self, other, *, rounding_mode=None):
        return OPS["div"](self, other, rounding_mode=rounding_mode)

    def div_(self, other, *, rounding_mode=None):
        return OPS["div_"](self, other, rounding_mode=rounding_mode)

    def pow(self, exponent):
        return OPS["pow"](self, exponent)

    def pow_(self, exponent):
        return OPS["pow_"](self, exponent)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return OPS["addcmul_"](self, tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return OPS["addcdiv_"](self, tensor1, tensor2, value=value)

    def lerp_(self, end, weight):
        return OPS["lerp_"](self, end, weight)

    def zero_(self):
        return OPS["zero_"](self)

    def fill_(self, value):
        return OPS["fill_"](self, value)

    def copy_(self, src, non_blocking=False):
        return OPS["copy_"](self, src)

    def clamp_(self, min=None, max=None):
        return OPS["clamp_"](self, min, max)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        return OPS["normal_"](self, mean, std, generator=generator)

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        return OPS["uniform_"](self, a, b, generator=generator)

    def bernoulli_(self, p=0.5, *, generator=None):
        return OPS["bernoulli_"](self, p, generator=generator)

    def masked_fill_(self, mask, value):
        return OPS["masked_fill_"](self, mask, value)

    def index_add_(self, dim, index, source, *, alpha=1):
        return OPS["index_add_"](self, dim, index, source, alpha=alpha)

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
        return OPS["scatter_"](self, dim, index, src, value=value, reduce=reduce)

    def scatter_add_(self, dim, index, src):
        return OPS["scatter_add_"](self, dim, index, src)

    def clone(self, *, memory_format=None):
        if memory_format is None:
            return OPS["clone"](self)
        return OPS["clone"](self, memory_format=memory_format)

    def contiguous(self, memory_format=None):
        if memory_format is None:
            return OPS["contiguous"](self)
        return OPS["contiguous"](self, memory_format=memory_format)

    # Methods of global tensors: the distributed layer adds these ops to the table when the
    # first placement is made (``distributed/route.py``). Ops registered with ``register``
    # become methods by themselves (``dispatch.set_method_owner``, at the end of this file).
    def to_global(self, *args, **kwargs):
        return _global_op("to_global")(self, *args, **kwargs)

    def to_local(self, *args, **kwargs):
        return _global_op("to_local")(self, *args, **kwargs)

    def redistribute(self, *args, **kwargs):
        return _global_op("redistribute")(self, *args, **kwargs)

    def full_tensor(self, *args, **kwargs):
        return _global_op("full_tensor")(self, *args, **kwargs)

    # Shape methods whose Tensor form takes varargs, unlike the functional form.
    def view(self, *shape, size=None, dtype=None):
        if dtype is not None:  # view(dtype=torch.int32): torch's keyword form of view(dtype)
            if shape or size is not None:
                raise TypeError("view() takes a shape or dtype=, not both")
            shape = (dtype,)
        if size is not None:
            shape = _keyword_form("view", shape, size, "size")
        if len(shape) == 1 and not isinstance(shape[0], int):
            if isinstance(shape[0], dtypes.dtype):
                return OPS["view_dtype"](self, shape[0])
            shape = tuple(shape[0])
        return OPS["view"](self, shape)

    def reshape(self, *sizes, shape=None):
        if shape is not None:
            sizes = _keyword_form("reshape", sizes, shape, "shape")
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        return OPS["reshape"](self, sizes)

    def view_as(self, other):
        return OPS["view"](self, tuple(other.shape))

    def reshape_as(self, other):
        return OPS["reshape"](self, tuple(other.shape))

    def permute(self, *order, dims=None):
        if dims is not None:
            order = _keyword_form("permute", order, dims, "dims")
        if len(order) == 1 and not isinstance(order[0], int):
            order = tuple(order[0])
        return OPS["permute"](self, order)

    def expand(self, *sizes, size=None):
        if size is not None:
            sizes = _keyword_form("expand", sizes, size, "size")
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        return OPS["expand"](self, sizes)

    def expand_as(self, other):
        return OPS["expand"](self, tuple(other.shape))

    def repeat(self, *sizes, repeats=None):
        if repeats is not None:
            sizes = _keyword_form("repeat", sizes, repeats, "repeats")
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        return OPS["repeat"](self, sizes)

    def tile(self, *sizes, dims=None):
        if dims is not None:
            sizes = _keyword_form("tile", sizes, dims, "dims")
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        return OPS["tile"](self, sizes)

    def flip(self, *order, dims=None):
        if dims is not None:
            order = _keyword_form("flip", order, dims, "dims")
        if len(order) == 1 and not isinstance(order[0], int):
            order = tuple(order[0])
        return OPS["flip"](self, order)

    def t(self):
        return OPS["t"](self)

    def split(self, split_size, dim=0):
        """torch's ``Tensor.split(split_size, dim)`` (the method names it ``split_size``;
        ``torch.split`` names it ``split_size_or_sections``)."""
        return OPS["split"](self, split_size, dim)

    def transpose(self, dim0, dim1):
        return OPS["transpose"](self, dim0, dim1)

    def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None,
                  pin_memory=False):
        return OPS["zeros"](*sizes, size=size, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)

    def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None,
                  pin_memory=False):
        return OPS["ones"](*sizes, size=size, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
                 pin_memory=False):
        return OPS["full"](size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)

    def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None,
                  pin_memory=False):
        return OPS["empty"](*sizes, size=size, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad, layout=layout, pin_memory=pin_memory)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        if layout is not None and layout is not strided:
            raise NotImplementedError(f"new_tensor(layout={layout!r}) is not supported: shardflow makes "
                                      "this tensor dense; call .to_sparse() on the result")
        if pin_memory:
            OPS["pin_memory"](self)  # torch's CPU-build error without CUDA
        out = Tensor(data, dtype=dtype or self.dtype)
        dev = device or self.device
        if out.device != dev:
            out = out.to(dev)
        return out.requires_grad_(True) if requires_grad else out


class _RemovableHandle(RemovableHandle):
    """A Tensor's or node's hook handle: ``remove()`` unregisters the hook; ``id`` comes from
    the counter Module hook handles use too (``hook_ids.py``), as in torch. A
    ``RemovableHandle`` (torch's class for every hook handle), over a list instead of dicts."""

    def __init__(self, container, item):  # (the base's dicts are not used)
        self.hook_dicts = ()
        self._container = container
        self._item = item
        self.id = next_handle_id()

    def remove(self) -> None:
        try:
            self._container.remove(self._item)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _global_op(name: str):
    f = OPS.get(name)
    if f is None:
        raise RuntimeError(
            f"Tensor.{name}() works on global tensors, which need a placement: make one first "
            f"(shardflow.placement('cpu', ranks) or init_device_mesh), then call {name}")
    return f


def _called_by_shardflow() -> bool:
    """Whether ``Tensor(...)`` was called by shardflow's own code (frame 2: the caller of
    ``Tensor.__init__``, a subclass's ``super().__init__`` included). Inside shardflow
    ``Tensor(array)`` wraps an array as it is (pickles, shared memory, ops' results keep
    their dtypes); a program's ``torch.Tensor(ndarray)`` is torch's legacy constructor,
    which converts to the default dtype (``legacy_types.user_array``)."""
    name = sys._getframe(2).f_globals.get("__name__", "")
    return name == "shardflow" or name.startswith("shardflow.")


def _rebuild(array, requires_grad):
    return Tensor(array, requires_grad=requires_grad)


def _is_float(arr) -> bool:
    k = arr.dtype.kind
    return k == "f" or k == "V"


def _is_differentiable(arr) -> bool:
    """Floating or complex: the dtypes PyTorch lets require gradients."""
    k = arr.dtype.kind
    return k == "f" or k == "V" or k == "c"


def _wrap_dim(dim: int, ndim: int) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {dim})"
        )
    return dim + ndim if dim < 0 else dim


def _short(data) -> str:
    text = repr(data)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_array(data, dtype):
    """Build a backend array from Python data / NumPy / Tensor with PyTorch's default dtypes.
    A storage gives a 1-D view of its elements (``torch.Tensor(storage)`` shares its memory)."""
    if _storage.is_storage(data):
        want = getattr(data, "dtype", None) or (as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype())
        return _storage.typed_view(data, want)
    if isinstance(data, Tensor):
        arr = data.array
        return arr if dtype is None else dtypes.cast(arr, dtype)
    # nested sequences: the dtype their NumPy / Tensor leaves ask for, and torch's warning for
    # a list of ndarrays (sequence_data.py); a flat list of Python numbers, the common case, is
    # read once (NumPy's inference of it is torch's)
    found = None
    if isinstance(data, list | tuple) and not set(map(type, data)) <= sequence_data.PYTHON_SCALARS:
        found = sequence_data.scan(data, Tensor)
    src = data if found is None else _nested(data)
    if dtype is not None:
        npd = as_dtype(dtype).np
        if isinstance(data, np.ndarray | MetaArray):
            return data.astype(npd, copy=False) if data.dtype == npd or isinstance(data, MetaArray) else dtypes.cast(data, dtype)
        if npd.kind == "V":
            arr = dtypes.cast(np.asarray(src, dtype=np.float32), dtype)
        else:
            try:
                arr = np.asarray(src, dtype=npd)
            except OverflowError:  # NumPy's; torch names the dtype in a RuntimeError
                raise RuntimeError(f"value cannot be converted to type {npd.name} without overflow: a value "
                                   f"of {_short(data)} is out of {npd.name}'s range; pick a wider dtype") from None
        if found is not None:
            sequence_data.warn_list_of_ndarrays(found, arr.size)
        return arr
    if isinstance(data, np.ndarray | MetaArray):
        return data
    if is_device_array(data):
        return data
    want = None if found is None else sequence_data.inferred_dtype(found)
    try:
        arr = np.asarray(src, dtype=None if want is None else want.np)
    except ValueError:  # NumPy's "inhomogeneous shape": torch names the dim and the lengths
        raise ValueError(_ragged(data) or "cannot make a tensor of nested sequences of unequal "
                         "lengths; pad them to one length") from None
    if found is not None:
        sequence_data.warn_list_of_ndarrays(found, arr.size)
    if want is not None:
        return arr  # torch's promoted leaf dtype, as inferred
    if arr.dtype == np.float64 and not isinstance(data, np.generic):
        arr = arr.astype(dtypes.get_default_dtype().np)
    elif arr.dtype == np.complex128 and not isinstance(data, np.generic):
        arr = arr.astype(dtypes.get_default_complex_dtype().np)  # [1 + 2j] -> complex64
    elif arr.dtype.kind in "iu" and not isinstance(data, np.generic):
        arr = arr.astype(np.int64)
    elif arr.dtype.kind in "US":  # strings: torch's TypeError for one, ValueError inside a sequence
        if isinstance(data, str):
            raise TypeError(f"new(): invalid data type 'str' (got {data!r}); a tensor holds numbers")
        raise ValueError(f"too many dimensions 'str': a tensor holds numbers, got strings in {type(data).__name__} data")
    elif arr.dtype.kind not in "fiubVc":
        raise _InferDtypeError(f"Could not infer dtype of {_odd_leaf_type(arr, data)}: a tensor holds numbers "
                               f"(bool, int, float, complex); got {type(data).__name__} data")
    return arr


class _InferDtypeError(RuntimeError, TypeError):
    """torch's RuntimeError for data it cannot type (``torch.tensor(None)``, ``[1, None]``,
    a dict); a TypeError too, the type shardflow raised before."""


def _odd_leaf_type(arr, data) -> str:
    """The type name of the first element that is not a number (torch's message names it)."""
    if arr.dtype == object:
        for leaf in arr.reshape(-1):
            if not isinstance(leaf, bool | int | float | complex | np.generic):
                return type(leaf).__name__
    return type(data).__name__


def _ragged(data, dim=0):
    """PyTorch's message for nested sequences of unequal lengths ("expected sequence of
    length 2 at dim 1 (got 1)"), or None when ``data`` is not ragged that way."""
    subs = [d for d in data if isinstance(d, list | tuple)] if isinstance(data, list | tuple) else []
    if not subs:
        return None
    want = len(subs[0])
    for d in subs:
        if len(d) != want:
            return f"expected sequence of length {want} at dim {dim + 1} (got {len(d)})"
    for d in subs:
        msg = _ragged(d, dim + 1)
        if msg:
            return msg
    return None


def _nested(data):
    """Turn lists that contain Tensors into lists of their values. A Tensor inside a sequence
    is one scalar, as in torch: ``tensor([ones(1), ones(1)])`` has shape (2,), and a Tensor
    of any other number of elements there is torch's ValueError."""
    if isinstance(data, list | tuple) and data and any(isinstance(d, Tensor | list | tuple) for d in data):
        return [_scalar_leaf(d) if isinstance(d, Tensor) else _nested(d) for d in data]
    return data


def _scalar_leaf(t: Tensor) -> np.ndarray:
    if t.numel() != 1:
        raise ValueError(f"only one element tensors can be converted to Python scalars (a tensor of shape "
                         f"{tuple(t.shape)} inside the data; torch.stack the tensors, or pass t.item())")
    return t.numpy().reshape(())


def _check_inplace_cast(src, dst) -> None:
    """PyTorch's ``canCast`` for an in-place result: a floating result never goes into an
    integer or bool tensor, and only a bool result goes into a bool tensor (``int_t.add_(0.5)``
    raises in PyTorch instead of truncating)."""
    s, d = np.dtype(src).kind, np.dtype(dst).kind
    floating = s in "fcV"  # "V": ml_dtypes bfloat16
    if (floating and d in "iub") or (d == "b" and s != "b"):
        raise RuntimeError(
            f"result type {np.dtype(src).name} can't be cast to the desired output type "
            f"{np.dtype(dst).name} of this in-place op; use the out-of-place form (t = t + x) "
            f"or convert the tensor first (t = t.to(float32))")


def _foreign(x) -> bool:
    """Not a Tensor, a number or array data (function.binary_operator's rule for ``+ - * /``):
    the operator methods return NotImplemented for it, as PyTorch's, so that Python tries
    the other operand's reflected method."""
    return not isinstance(x, (Tensor, numbers.Number, np.generic, np.ndarray, list, tuple))


# Every registered op is a Tensor method unless spelled out above (see dispatch.py). These
# binary operators are the ops themselves (``Tensor.__mul__`` is mul's two-argument form, or
# the routed ``mul`` while a hook is installed: dispatch.set_method_owner), with no method
# frame before them; the reflected and in-place ones are spelled out above.
_OPERATORS = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
              "__matmul__": "matmul"}
set_method_owner(Tensor, _OPERATORS)


def _size_one_strides(st: tuple, shape: tuple) -> tuple:
    """Strides as PyTorch reports them for size-1 dims that NumPy gives stride 0 (``x[None]``,
    ``unsqueeze`` of a broadcast, ``expand`` to a new leading 1): the stride ``unsqueeze``
    gives, the next dim's stride times its size (1 for the last dim). Only the reported
    number changes; no element is reached through a size-1 dim's stride."""
    out = list(st)
    for d in range(len(out) - 1, -1, -1):
        if shape[d] == 1 and out[d] == 0:
            out[d] = out[d + 1] * shape[d + 1] if d + 1 < len(out) else 1
    return tuple(out)

