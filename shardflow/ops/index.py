"""Indexing ops: ``x[i]`` / ``x[i] = v``, gather/scatter, index_select/index_add, masked ops,
take_along_dim, embedding, nonzero/argwhere (``where(cond)`` lives in elementwise).

Indexing (``getitem``) follows PyTorch: ints, slices (positive steps only: a negative step
raises ``ValueError`` as in PyTorch), ``None``, ``Ellipsis``, integer tensors/lists/ranges
(advanced indexing, NumPy's rules) and boolean masks. Index tensors must be integer or
bool. Every index is checked before anything is read or written; an out-of-range index
raises ``IndexError`` naming the value, the dim and its size. Basic indexing returns a view
sharing the version counter; advanced indexing copies.

Backward: basic indexing and boolean masks (no repeated positions) write the gradient into
zeros; integer-array indexing accumulates with ``add.at`` (repeated indices add up).

Devices: index arrays and masks may be NumPy arrays, lists or CPU tensors for CUDA data (as in
PyTorch); they are checked on the host, then copied to the device once (they are saved for
backward there). A CUDA index for CPU data is refused, as in PyTorch. CuPy wraps out-of-range
indices silently, so the bounds checks here are what raises ``IndexError`` on CUDA too.

In-place ops (``x[i] = v``, ``scatter_``, ``index_add_``, ``masked_fill_``) write into the
tensor's own memory (views of it see the change) and, when autograd records them, rebase
the tensor's history onto the op (their backward never reads the overwritten values, so
writing in place is safe): the old tensor gets the gradient with zeros at overwritten
positions, the value gets the gradient of the positions it filled. Limitation: when the
written tensor is itself a view, the base tensor's autograd history is not rebased (its
data is updated).

``embedding`` backward accumulates rows with a Numba kernel (``kernels/embedding.py``: rows in
order, columns split over threads, so the sums are formed in ``np.add.at``'s order) when the
kernels are on, else with ``np.add.at``: measured against a sort + ``np.add.reduceat`` and a
``np.bincount`` accumulation (NumPy 2.4, vocab 50k x 256, 8k ids: 27 / 42 / 54 ms; vocab 1k x
64, 4k ids: 2.3 / 1.3 / 1.0 ms), add.at is best or close at the sizes that matter (large
vocab), so it is the fallback. Every NumPy scatter-add here goes through ``_add_at.py``: the
same row kernel for a contiguous float target, else ``add.at`` on one flat index
(``backend/flat_at.py``; 4k rows of 64: 2.3 -> 0.3 ms), the same sums in the same order.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..autograd.sparse_grad import rows_of
from ..backend import get_array_module, is_device_array
from ..backend.dtypes import _SCALAR_TYPE_NAMES
from ..backend.meta import MetaTensorError, is_meta_array
from ..backend.user_warning import warn_at_caller
from ..kernels import embedding as _emb_kernels
from . import _grad_graph as _gg
from ._add_at import add_at
from ._util import fill_scalar, inplace, needs_graph, unbroadcast, wrap_dim

__all__ = [
    "getitem", "setitem_", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_",
    "index_select", "index_add", "index_add_", "masked_fill", "masked_fill_", "masked_select",
    "take_along_dim", "take", "embedding", "nonzero", "argwhere",
]

def _dtype_name(arr) -> str:
    try:
        from ..backend import from_numpy_dtype

        return _SCALAR_TYPE_NAMES.get(from_numpy_dtype(arr.dtype).name, str(arr.dtype))
    except TypeError:
        return str(arr.dtype)


def _bad_index_dtype(arr) -> IndexError:
    return IndexError(
        f"tensors used as indices must be long, int, byte or bool tensors, got {_dtype_name(arr)}; "
        "convert the index with .long() (or build a bool mask)"
    )


class _IndexDtypeError(RuntimeError, IndexError):
    """A non-integer index argument of gather/scatter/index_select/take...: torch raises
    RuntimeError ("gather(): Expected dtype int32/int64 for index"; ``index_fill`` an
    IndexError), shardflow raised IndexError; this is both, so either ``except`` catches it."""


def _int_index(index, op: str, xp=np):
    """An integer index argument (Tensor, array, list) as a raw integer array, where it is
    (move it with :func:`_to_xp` after the host-side checks); ``xp``: the data's module."""
    if isinstance(index, Tensor):
        arr = index.array
    else:
        arr = index if is_device_array(index) else np.asarray(index)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "b":
            raise _IndexDtypeError(f"{op}(): Expected dtype int32/int64 for index, got Bool; use .long()")
        raise _IndexDtypeError(f"{op}(): Expected dtype int32/int64 for index, got {_dtype_name(arr)}; "
                               "convert the index with .long()")
    if is_meta_array(arr):  # an integer gather has no shape rule on the meta device
        raise MetaTensorError(f"{op}() with an integer index")
    if xp is np and not isinstance(arr, np.ndarray):
        raise _device_mismatch(op)
    return arr


def _device_mismatch(op: str) -> RuntimeError:
    return RuntimeError(
        f"{op}: indices should be either on cpu or on the same device as the indexed tensor "
        "(cpu); move the index with .cpu()"
    )


def _to_xp(arr, xp):
    """An index/mask array on the data's device (``xp``): host arrays are copied there once,
    device arrays (and everything on the CPU path) are returned as they are."""
    return arr if xp is np else xp.asarray(arr)


def _is_array(x) -> bool:
    """An array index component: NumPy's, or a device array (CuPy's are not np.ndarray)."""
    return isinstance(x, np.ndarray) or is_device_array(x)


def _to_input_device(value: Tensor, input: Tensor) -> Tensor:
    """``value`` on ``input``'s device: a differentiable copy when it lives elsewhere (a CUDA
    value written into a CPU tensor, or a CPU one into CUDA, as PyTorch's copy_ allows)."""
    if type(value.array) is type(input.array):
        return value
    return value.to(input.device)


def _check_bounds(idx, size: int, dim: int, allow_negative: bool, error: type = IndexError) -> None:
    """Raise ``error`` naming the first offending value (before any state changes): PyTorch's
    type, an IndexError for indexing, ``index_add/copy/fill``, ``take``, ``put`` and
    ``embedding``, a RuntimeError for ``gather``, the ``scatter`` family, ``index_select``
    and ``embedding_bag`` (programs catch the one torch raises)."""
    if idx.size == 0:
        return
    lo = -size if allow_negative else 0
    mn, mx = int(idx.min()), int(idx.max())
    if mn < lo or mx >= size:
        bad = mn if mn < lo else mx
        raise error(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _add_at(target, idx, values) -> None:
    """``target[idx] += values`` with repeated indices accumulating (``_add_at.py``)."""
    add_at(target, idx, values)


# ---------------------------------------------------------------------------- index parsing
def _is_int(x) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


def _to_index_item(item):
    """Convert one component of an index to what NumPy understands (arrays, ints, slices);
    arrays stay where they are (NumPy's or the device's)."""
    tp = type(item)
    if tp is int or item is None or item is Ellipsis:
        return item
    if tp is slice and not isinstance(item.step, Tensor) and not isinstance(item.start, Tensor) \
            and not isinstance(item.stop, Tensor):
        if item.step is not None and item.step <= 0:
            raise ValueError("step must be greater than zero (negative-step slicing is not supported; use flip)")
        return item
    if isinstance(item, Tensor):
        arr = item.array
    elif isinstance(item, np.ndarray):
        arr = item
    elif isinstance(item, list | tuple):
        arr = np.asarray([i.item() if isinstance(i, Tensor) else i for i in item]) if item else np.zeros(0, np.int64)
    elif isinstance(item, range):  # PyTorch: a range is a list of ints (advanced indexing)
        arr = np.arange(item.start, item.stop, item.step, dtype=np.int64)
    elif is_device_array(item):
        arr = item
    else:
        if isinstance(item, slice):
            vals = []
            for v in (item.start, item.stop, item.step):
                if isinstance(v, Tensor):
                    v = int(v.item())
                vals.append(v)
            if vals[2] is not None and vals[2] <= 0:
                raise ValueError("step must be greater than zero (negative-step slicing is not supported; use flip)")
            return slice(*vals)
        if item is None or item is Ellipsis or isinstance(item, bool | np.bool_) or _is_int(item):
            return item
        raise IndexError(
            f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
            f"valid indices, got {type(item).__name__}"
        )
    k = arr.dtype.kind
    if k == "b":
        return arr
    if k == "u" and arr.dtype.itemsize == 1:
        return arr.astype(bool)  # legacy uint8 masks
    if k not in "iu":
        raise _bad_index_dtype(arr)
    if arr.ndim == 0 and isinstance(item, Tensor):
        return int(arr)  # 0-d integer tensor acts like an int (a view, as in PyTorch)
    return arr


def _device_index(it, a) -> bool:
    """Whether the index component ``it`` (not a NumPy array) is a device array; one for
    host data ``a`` is refused, as in PyTorch."""
    if not is_device_array(it):
        return False
    if isinstance(a, np.ndarray):
        raise _device_mismatch("index")
    return True


def _parse_index(index, a):
    """Normalise ``index`` for the array ``a``: returns ``(idx, advanced, unique, add_idx)``.

    ``idx`` is the NumPy index tuple (with a trailing Ellipsis so results are arrays);
    ``advanced``: any array component; ``unique``: no position can be selected twice (no
    integer arrays), so backward may assign instead of accumulate; ``add_idx`` is ``idx`` with
    boolean masks expanded to their ``nonzero()`` arrays (for ``add.at``). Index arrays end up
    on ``a``'s device (checked first, on the host when they come from it).

    Phases: normalise each component (``_to_index_item``), check them against ``a.shape``
    (:func:`_check_index_items`), then, for advanced indices only, move host index arrays to
    ``a``'s device and expand masks (:func:`_advanced_index`).
    """
    if not isinstance(index, tuple):
        index = tuple(index) if _sequence_as_tuple(index) else (index,)
    items = [_to_index_item(i) for i in index]
    advanced, has_int_array, has_ellipsis = _check_index_items(items, a)
    if not has_ellipsis:
        items.append(Ellipsis)
    if advanced:
        idx, add_idx = _advanced_index(items, a, has_int_array)
        return idx, True, not has_int_array, add_idx
    idx = tuple(items)
    return idx, False, True, idx


_BOOLS = (bool, np.bool_)


def _sequence_as_tuple(index) -> bool:
    """torch's (and old NumPy's) rule for a list index: one with fewer than 32 entries of
    which one is a sequence, a slice, None, Ellipsis or a tensor means ``x[tuple(index)]``
    (``x[[[0, 1], [1, 2]]]`` picks the elements (0, 1) and (1, 2)), with torch's deprecation
    warning; any other list is one index tensor. Reading it as one tensor gave other
    elements (and shapes) silently."""
    if not isinstance(index, list) or len(index) >= 32:
        return False
    if not any(isinstance(i, list | tuple | slice | Tensor) or i is None or i is Ellipsis for i in index):
        return False
    warn_at_caller(
        "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
        "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
        "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result")
    return True


def _check_index_items(items: list, a) -> tuple[bool, bool, bool]:
    """Check the normalised index components against ``a.shape`` (count of dimensions, int
    bounds, mask shapes, one Ellipsis, device); returns ``(advanced, has_int_array,
    has_ellipsis)``."""
    shape = a.shape
    nd = len(shape)
    used = 0  # dimensions the index consumes (a mask consumes its ndim)
    for it in items:
        tp = type(it)
        if tp is int or tp is slice:
            used += 1
        elif it is None or it is Ellipsis or tp is bool or tp is np.bool_:
            continue
        else:
            used += it.ndim if _is_array(it) and it.dtype.kind == "b" else 1
    if used > nd:
        if nd == 0 and any(type(it) is int for it in items):
            # PyTorch's own message for t[0] of a 0-d tensor, with its fix: the pre-0.4
            # idiom ``loss.data[0]`` (old tutorials) is ``loss.item()`` today
            raise IndexError("invalid index of a 0-dim tensor: it has no dimension to index (shape ()); "
                             "use tensor.item() to convert a 0-dim tensor to a number (loss.data[0] -> loss.item())")
        raise IndexError(f"too many indices for tensor of dimension {nd}: the index uses {used} dims, shape is {tuple(shape)}")
    d = 0  # the dimension of ``a`` the next component indexes
    advanced = False
    has_int_array = False
    has_ellipsis = False
    for j, it in enumerate(items):
        tp = type(it)
        if tp is slice:
            d += 1
        elif tp is int:
            if not -shape[d] <= it < shape[d]:
                raise IndexError(f"index {it} is out of bounds for dimension {d} with size {shape[d]}")
            d += 1
        elif it is Ellipsis:
            if has_ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            has_ellipsis = True
            d += nd - used
        elif it is None:
            continue
        elif isinstance(it, _BOOLS):
            advanced = True
        elif isinstance(it, slice):
            d += 1
        elif isinstance(it, np.ndarray) or _device_index(it, a):
            advanced = True
            if it.dtype.kind == "b":
                k = it.ndim
                if tuple(it.shape) != tuple(shape[d:d + k]):
                    raise IndexError(
                        f"The shape of the mask {list(it.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(shape[d:d + k])} at index {d}"
                    )
                d += k
            else:
                has_int_array = True
                _check_bounds(it, shape[d], d, allow_negative=True)
                d += 1
        else:  # int
            if not -shape[d] <= it < shape[d]:
                raise IndexError(f"index {it} is out of bounds for dimension {d} with size {shape[d]}")
            d += 1
    return advanced, has_int_array, has_ellipsis


def _advanced_index(items: list, a, has_int_array: bool) -> tuple[tuple, tuple]:
    """``(idx, add_idx)`` of a checked advanced index: host index arrays moved to ``a``'s
    device (once, checked above); ``add_idx`` expands masks to ``nonzero()`` arrays when
    integer arrays are present (else it is ``idx``)."""
    xp = np
    if not isinstance(a, np.ndarray):
        xp = get_array_module(a)
        for j, it in enumerate(items):
            if isinstance(it, np.ndarray):
                items[j] = xp.asarray(it)
    idx = tuple(items)
    if not has_int_array:
        return idx, idx
    exp = []
    for it in items:
        if isinstance(it, xp.ndarray) and it.dtype.kind == "b":
            exp.extend(xp.nonzero(it))
        else:
            exp.append(it)
    return idx, tuple(exp)


# ---------------------------------------------------------------------------- getitem
class Index(Function):
    save_inputs = ()

    def forward(self, a, idx=None, unique=True, add_idx=None):
        self.in_shape, self.idx, self.unique, self.add_idx = a.shape, idx, unique, add_idx
        return a[idx]

    def backward(self, g):
        xp = get_array_module(g)
        out = xp.zeros(self.in_shape, g.dtype)
        if self.unique:
            out[self.idx] = g
        else:
            _add_at(out, self.add_idx, g)
        return out

    def backward_graph(self, g):
        idx, unique, add_idx = self.idx, self.unique, self.add_idx
        return _gg.adjoint(self, g, lambda t: Index.apply(t, idx=idx, unique=unique, add_idx=add_idx))


@register("getitem")
def getitem(input: Tensor, index) -> Tensor:
    """``input[index]`` with PyTorch semantics (see the module docstring)."""
    idx, advanced, unique, add_idx = _parse_index(index, input.array)
    out = Index.apply(input, idx=idx, unique=unique, add_idx=add_idx)
    if out.grad_fn is not None:  # torch's name, kept after backward frees the index; a basic
        # index keeps what its name is derived from, named only when asked (~1 us a getitem)
        out.grad_fn._torch_name = "IndexBackward0" if advanced else (index, idx, input.array.shape)
    if not advanced:  # a view: shared counter, and its base (shape._share's rule)
        out._version_counter = input._version_counter
        out._base = input._base if input._base is not None else input
    return out


# ---------------------------------------------------------------------------- in-place helper
def _writeable(a) -> bool:
    """NumPy arrays may be read-only views (``np.broadcast_to``, ``from_numpy`` of such);
    CuPy's ``flags`` has no ``writeable``: every device array can be written."""
    return getattr(a.flags, "writeable", True)


def _run_inplace(t: Tensor, op: str, fn_cls, *args, **params) -> Tensor:
    """Run ``fn_cls`` with ``inplace=True`` on ``t``'s memory and record it like PyTorch.

    The check for a leaf that requires grad comes before any write, so a refused op changes
    nothing.
    """
    if needs_graph(t, *args):
        t._check_inplace_allowed(f"an in-place operation ({op})")
        if not _writeable(t.array):
            _raise_readonly(t, op)
        res = fn_cls.apply(t, *args, inplace=True, **params)
        return inplace(t, res)
    if not _writeable(t.array):
        _raise_readonly(t, op)
    fn_cls.apply(t, *args, inplace=True, **params)
    t._version_counter[0] += 1
    return t


def _raise_readonly(t: Tensor, op: str):
    raise RuntimeError(
        f"{op}: unsupported operation: more than one element of the written-to tensor (shape "
        f"{tuple(t.shape)}) refers to a single memory location (an expanded tensor); call "
        ".clone() before writing into it"
    )


# ---------------------------------------------------------------------------- setitem
class IndexPut(Function):
    """``out = a; out[idx] = v`` (in place when ``inplace``). Backward: ``a`` gets ``g`` with
    zeros at ``idx``; ``v`` gets ``g[idx]`` reduced to its shape."""

    save_inputs = ()

    def forward(self, a, v, idx=None, inplace=False, accumulate=False, add_idx=None):
        self.idx, self.accumulate = idx, accumulate
        self.v_shape = getattr(v, "shape", None)
        out = a if inplace else a.copy()
        xp = get_array_module(a)  # v and the index arrays are on a's device too
        try:
            if accumulate:
                sel = _selected_shape(a.shape, idx, xp)
                _add_at(out, add_idx, xp.broadcast_to(v, sel) if hasattr(v, "shape") else v)
            else:
                out[idx] = v  # NumPy checks the broadcast before writing anything
        except ValueError:
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(getattr(v, 'shape', ()))} cannot be "
                f"broadcast to indexing result of shape {list(_selected_shape(a.shape, idx, xp))}"
            ) from None
        return out

    def backward(self, g):
        ga = gv = None
        if self.needs_input_grad[0]:
            if self.accumulate:
                ga = g
            else:
                ga = g.copy()
                ga[self.idx] = 0
        if self.needs_input_grad[1]:
            gv = _reduce_to(g[self.idx], self.v_shape)
        return ga, gv

    def backward_graph(self, g):
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = g if self.accumulate else IndexPut.apply(g, 0.0, idx=self.idx)  # zero where overwritten
        if self.needs_input_grad[1]:  # g[idx] (an Index node: its adjoint accumulates repeats)
            picked = Index.apply(g, idx=self.idx, unique=False, add_idx=_expanded_masks(self.idx))
            gv = _gg.sum_to_shape(picked, self.v_shape)
        return ga, gv


def _expanded_masks(idx: tuple) -> tuple:
    """``idx`` with its boolean arrays replaced by their ``nonzero()`` arrays (the form
    ``add.at`` takes, see ``_advanced_index``)."""
    out = []
    for it in idx:
        if _is_array(it) and it.dtype.kind == "b":
            out.extend(get_array_module(it).nonzero(it))
        else:
            out.append(it)
    return tuple(out)


def _reduce_to(g, shape):
    """Sum a broadcast gradient down to ``shape`` (which may carry extra leading 1s)."""
    if g.shape == tuple(shape):
        return g
    stripped = tuple(shape)
    while len(stripped) > g.ndim and stripped[0] == 1:
        stripped = stripped[1:]
    return unbroadcast(g, stripped).reshape(shape)


def _selected_shape(shape, idx, xp=np):
    """Shape of ``a[idx]`` without materialising it (indexes a zero-strided dummy made by
    ``xp``, the data's module, where ``idx``'s arrays are)."""
    dummy = xp.broadcast_to(xp.zeros((), np.int8), shape)
    return dummy[idx].shape


@register("setitem_")
def setitem_(input: Tensor, index, value) -> Tensor:
    """``input[index] = value``: value is a scalar or a tensor broadcast to the selection."""
    idx, advanced, _, _ = _parse_index(index, input.array)
    if isinstance(value, Tensor):
        value = _to_input_device(value, input)
        if value.array.dtype != input.array.dtype:
            if advanced:
                _check_index_put_dtype(input, idx, value)
            from .conversion import to_dtype

            value = to_dtype(value, input.dtype)
    elif isinstance(value, np.ndarray | list | tuple):
        value = _to_input_device(Tensor(np.asarray(value), dtype=input.dtype), input)
    # a basic index writes through a view: torch's node is CopySlices (advanced: IndexPut)
    return _run_inplace(input, "setitem", IndexPut if advanced else _SliceCopy, value, idx=idx)


def _check_index_put_dtype(input: Tensor, idx: tuple, value: Tensor) -> None:
    """torch's ``index_put_`` (what ``x[advanced index] = tensor`` runs) refuses a value of
    another dtype, except where it becomes ``masked_fill_``: one boolean mask among the
    index's arrays and a one-element value. (A basic index copies, casting; so does a
    Python number or list, made in ``input``'s dtype first.) shardflow cast silently: gpt-fast's
    float32 keys written into its bfloat16 KV cache by ``k_out[:, :, input_pos] = k_val``."""
    arrays = [it for it in idx if _is_array(it)]
    if value.numel() == 1 and len(arrays) == 1 and arrays[0].dtype.kind == "b":
        return
    raise RuntimeError(
        f"Index put requires the source and destination dtypes match, got "
        f"{_SCALAR_TYPE_NAMES.get(input.dtype.name, input.dtype.name)} for the destination and "
        f"{_SCALAR_TYPE_NAMES.get(value.dtype.name, value.dtype.name)} for the source.")


class _SliceCopy(IndexPut):
    """``IndexPut`` of a basic (view) index: ``x[0, 1:3] = v``, named as torch's node."""

    torch_name = "CopySlices"


# ---------------------------------------------------------------------------- gather / scatter
def _grid_index(index, dim: int):
    """Index tuple selecting ``a[i0, .., index[i], .., ik]`` for each position of ``index``
    (a 0-d index of a 1-d ``a`` picks one element: torch's gather of a 0-d index)."""
    nd = index.ndim
    if nd == 0:
        return (index,)
    xp = get_array_module(index)
    out = []
    for d in range(nd):
        if d == dim:
            out.append(index)
        else:
            sh = [1] * nd
            sh[d] = index.shape[d]
            out.append(xp.arange(index.shape[d]).reshape(sh))
    return tuple(out)


def _check_gather_shapes(op, a_shape, index_shape, dim, src_shape=None):
    if len(index_shape) != len(a_shape) and not (len(a_shape) == 0 and len(index_shape) <= 1):
        raise RuntimeError(
            f"{op}(): Index tensor must have the same number of dimensions as input tensor: "
            f"index shape {tuple(index_shape)}, input shape {tuple(a_shape)}"
        )
    for d in range(len(index_shape)):
        if d != dim and index_shape[d] > a_shape[d]:
            raise RuntimeError(
                f"{op}(): Size does not match at dimension {d}: expected index shape "
                f"{tuple(index_shape)} to be smaller than self {tuple(a_shape)} apart from "
                f"dimension {dim}"
            )
        if src_shape is not None and index_shape[d] > src_shape[d]:
            raise RuntimeError(
                f"{op}(): Expected index shape {tuple(index_shape)} to be smaller than src "
                f"{tuple(src_shape)} at dimension {d}"
            )


class Gather(Function):
    save_inputs = ()

    def forward(self, a, index=None, dim=0):
        self.in_shape, self.grid = a.shape, _grid_index(index, dim)
        return a[self.grid]

    def backward(self, g):
        out = get_array_module(g).zeros(self.in_shape, g.dtype)
        _add_at(out, self.grid, g)
        return out

    def backward_graph(self, g):
        grid = self.grid
        return _gg.adjoint(self, g, lambda t: Index.apply(t, idx=grid, unique=False, add_idx=grid))


@register("gather")
def gather(input: Tensor, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j][k] = input[i][index[i][j][k]][k]`` (for dim=1)."""
    a = input.array
    xp = get_array_module(a)
    idx = _int_index(index, "gather", xp)
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        raise RuntimeError("gather(): 0-dim input is not supported; unsqueeze it to 1-d first")
    if not (idx.ndim == 0 and a.ndim == 1):  # torch: a 0-d index picks one element, 0-d result
        _check_gather_shapes("gather", a.shape, idx.shape, d)
    _check_bounds(idx, a.shape[d], d, allow_negative=False, error=RuntimeError)
    return Gather.apply(input, index=_to_xp(idx, xp), dim=d)


class Scatter(Function):
    """``out = a.copy(); out[grid(index)] = src[:index.shape]`` (or a scalar value);
    ``add`` accumulates instead. Backward: ``a`` gets ``g`` (zeroed where overwritten unless
    ``add``), ``src`` gets ``g`` gathered at ``index`` (zero outside index's extent)."""

    save_inputs = ()

    def forward(self, a, src, index=None, dim=0, add=False, inplace=False):
        self.grid, self.add = _grid_index(index, dim), add
        self.src_shape = getattr(src, "shape", None)
        out = a if inplace else a.copy()
        if getattr(src, "ndim", 0):  # an array src (NumPy's or the device's), not a scalar
            self.src_sl = tuple(slice(0, s) for s in index.shape)
            val = src[self.src_sl]
        else:
            val = src
        if add:
            _add_at(out, self.grid, val)
        else:
            out[self.grid] = val
        return out

    def backward(self, g):
        ga = gs = None
        if self.needs_input_grad[0]:
            if self.add:
                ga = g
            else:
                ga = g.copy()
                ga[self.grid] = 0
        if self.needs_input_grad[1]:
            if tuple(self.src_shape) == tuple(s.stop for s in self.src_sl):
                gs = g[self.grid]  # index covers src: no zero padding to write into
            else:
                gs = get_array_module(g).zeros(self.src_shape, g.dtype)
                gs[self.src_sl] = g[self.grid]
        return ga, gs

    def backward_graph(self, g):
        ga = gs = None
        if self.needs_input_grad[0]:
            ga = g if self.add else IndexPut.apply(g, 0.0, idx=self.grid)  # zero where overwritten
        if self.needs_input_grad[1]:
            gs = zero_padded(gathered(g, self.grid), self.src_shape, self.src_sl)
        return ga, gs


def gathered(g: Tensor, grid: tuple) -> Tensor:
    """``g[grid]`` for a gather/scatter grid (``_grid_index``) as a differentiable node; its
    adjoint accumulates repeated positions."""
    return Index.apply(g, idx=grid, unique=False, add_idx=grid)


def zero_padded(t: Tensor, shape, region: tuple) -> Tensor:
    """A zero Tensor of ``shape`` holding ``t`` at the basic index ``region`` (slices), linear
    in ``t`` (the src gradient of scatter-like ops: zero outside the index's extent)."""
    if tuple(t.shape) == tuple(shape):
        return t
    zeros = _wrap(get_array_module(t.array).zeros(shape, t.array.dtype))
    return IndexPut.apply(zeros, t, idx=tuple(region) + (Ellipsis,))


def _scatter_args(op, input, dim, index, src, value):
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{op}(): expected a src tensor or a value")
    a = input.array
    xp = get_array_module(a)
    idx = _int_index(index, op, xp)
    if idx.ndim == 0 and a.ndim == 1:
        # torch counts a 0-d index as one element (its shape check compares max(ndim, 1)):
        # the transforms tutorial's one-hot target_transform, zeros(10).scatter_(0, tensor(y), value=1)
        idx = idx.reshape(1)
    d = wrap_dim(dim, a.ndim)
    if isinstance(src, np.ndarray) or is_device_array(src):
        src = Tensor(src)
    if isinstance(src, Tensor):
        src = _to_input_device(src, input)
        if src.ndim == 0 and a.ndim == 1:  # one element too, as the index
            src = src.reshape(1)
        if src.array.dtype != a.dtype:
            raise RuntimeError(
                f"{op}(): Expected self.dtype to be equal to src.dtype: got {input.dtype} and "
                f"{src.dtype}; cast src with .to(input.dtype)"
            )
        _check_gather_shapes(op, a.shape, idx.shape, d, src.array.shape)
    else:
        _check_gather_shapes(op, a.shape, idx.shape, d)
        src = xp.asarray(src, dtype=a.dtype)  # a scalar value, 0-d where the data lives
    _check_bounds(idx, a.shape[d], d, allow_negative=False, error=RuntimeError)
    return _to_xp(idx, xp), d, src


def _reduce_arg(op, reduce):
    if reduce is None:
        return False
    if reduce in ("add", "sum"):
        return True
    raise NotImplementedError(f"{op}(): reduce={reduce!r} is not supported; use reduce=None or 'add'")


_warned_reduce_with_tensor = False


def _warn_reduce_with_tensor(src, reduce) -> None:
    """torch's once-per-process deprecation warning for ``scatter(..., src=tensor, reduce=...)``."""
    global _warned_reduce_with_tensor
    if reduce is not None and isinstance(src, Tensor) and not _warned_reduce_with_tensor:
        _warned_reduce_with_tensor = True
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
                      "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                      "options.", UserWarning, stacklevel=3)


def _scatter_multiply(input, dim, index, src, value):
    """``scatter(..., reduce="multiply")``: ``scatter_reduce`` with ``"prod"`` over ``input``'s
    own values (``src`` a tensor, or the number ``value``/``src`` at every index)."""
    from .index_extra import scatter_reduce

    number = value if value is not None else src
    if not isinstance(number, Tensor):
        src = _wrap(get_array_module(input.array).full(tuple(index.shape), number, dtype=input.array.dtype))
    return scatter_reduce(input, dim, index, src, "prod", include_self=True)


@register("scatter")
def scatter(input: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    """``out = input.clone(); out[...index...] = src`` along ``dim`` (src a tensor or a number);
    ``reduce="multiply"`` multiplies in (torch's deprecated form of ``scatter_reduce("prod")``)."""
    _warn_reduce_with_tensor(src, reduce)
    if reduce == "multiply":
        return _scatter_multiply(input, dim, index, src, value)
    idx, d, src = _scatter_args("scatter", input, dim, index, src, value)
    return Scatter.apply(input, src, index=idx, dim=d, add=_reduce_arg("scatter", reduce))


@register("scatter_")
def scatter_(input: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    _warn_reduce_with_tensor(src, reduce)
    if reduce == "multiply":
        return inplace(input, _scatter_multiply(input, dim, index, src, value))
    idx, d, src = _scatter_args("scatter_", input, dim, index, src, value)
    return _run_inplace(input, "scatter_", Scatter, src, index=idx, dim=d, add=_reduce_arg("scatter_", reduce))


@register("scatter_add")
def scatter_add(input: Tensor, dim: int, index, src) -> Tensor:
    """``out = input.clone(); out[...index...] += src`` (repeated indices accumulate)."""
    idx, d, src = _scatter_args("scatter_add", input, dim, index, src, None)
    return Scatter.apply(input, src, index=idx, dim=d, add=True)


@register("scatter_add_")
def scatter_add_(input: Tensor, dim: int, index, src) -> Tensor:
    idx, d, src = _scatter_args("scatter_add_", input, dim, index, src, None)
    return _run_inplace(input, "scatter_add_", Scatter, src, index=idx, dim=d, add=True)


# ---------------------------------------------------------------------------- index_select / add
class IndexSelect(Function):
    save_inputs = ()

    def forward(self, a, index=None, dim=0):
        self.in_shape, self.index, self.dim = a.shape, index, dim
        return get_array_module(a).take(a, index, axis=dim)

    def backward(self, g):
        xp = get_array_module(g)
        out = xp.zeros(self.in_shape, g.dtype)
        _add_at(xp.moveaxis(out, self.dim, 0), self.index, xp.moveaxis(g, self.dim, 0))
        return out

    def backward_graph(self, g):
        index, dim = self.index, self.dim
        return _gg.adjoint(self, g, lambda t: IndexSelect.apply(t, index=index, dim=dim))


def _vector_index(op, index, a, dim):
    xp = get_array_module(a)
    idx = _int_index(index, op, xp)
    if idx.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector (0-d or 1-d), got shape {tuple(idx.shape)}")
    d = wrap_dim(dim, a.ndim)
    size = a.shape[d] if a.ndim else 1
    # torch's types: index_select's kernel raises RuntimeError, index_add's too beyond 1-d
    runtime = op == "index_select" or (op.startswith("index_add") and a.ndim > 1)
    _check_bounds(idx, size, d, allow_negative=False, error=RuntimeError if runtime else IndexError)
    return _to_xp(idx.reshape(-1), xp), d


@register("index_select")
def index_select(input: Tensor, dim: int, index) -> Tensor:
    """Rows (along ``dim``) of ``input`` picked by the 1-d ``index``."""
    idx, d = _vector_index("index_select", index, input.array, dim)
    if input.array.ndim == 0:
        raise RuntimeError("index_select(): 0-dim input is not supported; unsqueeze it to 1-d first")
    return IndexSelect.apply(input, index=idx, dim=d)


class IndexAdd(Function):
    save_inputs = ()

    def forward(self, a, src, index=None, dim=0, alpha=1, inplace=False):
        self.index, self.dim, self.alpha = index, dim, alpha
        xp = get_array_module(a)
        out = a if inplace else a.copy()
        _add_at(xp.moveaxis(out, dim, 0), index, xp.moveaxis(src if alpha == 1 else src * alpha, dim, 0))
        return out

    def backward(self, g):
        gs = None
        if self.needs_input_grad[1]:
            gs = get_array_module(g).take(g, self.index, axis=self.dim)
            if self.alpha != 1:
                gs = gs * self.alpha
        return g if self.needs_input_grad[0] else None, gs

    def backward_graph(self, g):
        gs = None
        if self.needs_input_grad[1]:
            gs = IndexSelect.apply(g, index=self.index, dim=self.dim)
            if self.alpha != 1:
                gs = gs * self.alpha
        return g if self.needs_input_grad[0] else None, gs


def _index_add_args(op, input, dim, index, source):
    a = input.array
    idx, d = _vector_index(op, index, a, dim)
    if not isinstance(source, Tensor):
        source = Tensor(np.asarray(source, dtype=a.dtype))
    source = _to_input_device(source, input)
    if source.array.dtype != a.dtype:
        raise RuntimeError(f"{op}(): self ({input.dtype}) and source ({source.dtype}) must have the same scalar type")
    expected = a.shape[:d] + (idx.size,) + a.shape[d + 1:]
    if tuple(source.array.shape) != expected:
        raise RuntimeError(
            f"{op}(): source of shape {tuple(source.shape)} does not match: expected {expected} "
            f"(input shape {tuple(a.shape)} with dim {d} replaced by len(index)={idx.size})"
        )
    return idx, d, source


@register("index_add")
def index_add(input: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    """``out = input.clone(); out.index_select(dim, index) += alpha * source`` (accumulating)."""
    idx, d, source = _index_add_args("index_add", input, dim, index, source)
    return IndexAdd.apply(input, source, index=idx, dim=d, alpha=alpha)


@register("index_add_")
def index_add_(input: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    idx, d, source = _index_add_args("index_add_", input, dim, index, source)
    return _run_inplace(input, "index_add_", IndexAdd, source, index=idx, dim=d, alpha=alpha)


# ---------------------------------------------------------------------------- masked ops
class MaskedFill(Function):
    """``where(mask, value, a)``. Backward: ``a`` gets ``g`` off the mask; a tensor ``value``
    gets the sum of ``g`` on the mask."""

    save_inputs = ()

    def forward(self, a, value, mask=None, inplace=False):
        self.mask, self.a_shape = mask, a.shape
        xp = get_array_module(a)
        v = value.astype(a.dtype) if hasattr(value, "astype") else value
        if inplace:
            xp.copyto(a, v, where=mask, casting="unsafe")
            return a
        return xp.where(mask, v, a).astype(a.dtype, copy=False)

    def backward(self, g):
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = unbroadcast(get_array_module(g).where(self.mask, 0, g).astype(g.dtype, copy=False), self.a_shape)
            ga = ga.reshape(self.a_shape)
        if self.needs_input_grad[1]:
            if isinstance(g, np.ndarray):
                gv = np.asarray(g.sum(where=np.broadcast_to(self.mask, g.shape)), dtype=g.dtype)
            else:  # CuPy's sum has no where=
                xp = get_array_module(g)
                gv = xp.where(self.mask, g, 0).sum().astype(g.dtype, copy=False)
        return ga, gv

    def backward_graph(self, g):
        mask = _wrap(get_array_module(g.array).broadcast_to(self.mask, g.shape))
        where = _gg.op("where")
        ga = _gg.sum_to(where(mask, 0.0, g), self.a_shape) if self.needs_input_grad[0] else None
        gv = where(mask, g, 0.0).sum() if self.needs_input_grad[1] else None
        return ga, gv


def _mask_arg(op, mask, a, inplace_op):
    """The boolean mask as an array on ``a``'s device (checked against ``a.shape``)."""
    shape, xp = a.shape, get_array_module(a)
    if isinstance(mask, Tensor):
        m = mask.array
    else:
        m = mask if is_device_array(mask) else np.asarray(mask)
    if m.dtype.kind != "b":
        raise RuntimeError(
            f"{op} only supports boolean masks, but got mask with dtype {_dtype_name(m)}; "
            "build it with a comparison or call .bool()"
        )
    try:
        out = np.broadcast_shapes(shape, m.shape)
    except ValueError:
        raise RuntimeError(
            f"{op}: the mask of shape {tuple(m.shape)} does not broadcast with the input of shape "
            f"{tuple(shape)}"
        ) from None
    if inplace_op and out != tuple(shape):
        raise RuntimeError(
            f"{op}: the mask of shape {tuple(m.shape)} must be broadcastable to the input shape "
            f"{tuple(shape)} for an in-place fill"
        )
    if xp is np and not isinstance(m, np.ndarray):
        raise RuntimeError(f"{op}: the mask is on cuda and the input on cpu; move the mask with .cpu()")
    return _to_xp(m, xp)


def _fill_value(op, value, input):
    if isinstance(value, Tensor):
        if value.array.ndim != 0:
            raise RuntimeError(
                f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.array.ndim} dimension(s)."
            )
        value = _to_input_device(value, input)  # PyTorch takes a CPU 0-d value for CUDA data
        if value.requires_grad and value.array.dtype != input.array.dtype:
            from .conversion import to_dtype

            value = to_dtype(value, input.dtype)
        if not value.requires_grad:
            return value.array.astype(input.array.dtype)
        return value
    return fill_scalar(value, input.array.dtype)


@register("masked_fill")
def masked_fill(input: Tensor, mask, value) -> Tensor:
    """``value`` where ``mask`` is True, ``input`` elsewhere (mask broadcasts)."""
    m = _mask_arg("masked_fill", mask, input.array, False)
    return MaskedFill.apply(input, _fill_value("masked_fill", value, input), mask=m)


@register("masked_fill_")
def masked_fill_(input: Tensor, mask, value) -> Tensor:
    m = _mask_arg("masked_fill_", mask, input.array, True)
    return _run_inplace(input, "masked_fill_", MaskedFill, _fill_value("masked_fill_", value, input), mask=m)


class MaskedSelect(Function):
    save_inputs = ()

    def forward(self, a, mask=None):
        shape = np.broadcast_shapes(a.shape, mask.shape)
        xp = get_array_module(a)
        self.a_shape, self.mask = a.shape, xp.broadcast_to(mask, shape)
        return xp.broadcast_to(a, shape)[self.mask]

    def backward(self, g):
        out = get_array_module(g).zeros(self.mask.shape, g.dtype)
        out[self.mask] = g
        return unbroadcast(out, self.a_shape).reshape(self.a_shape)

    def backward_graph(self, g):
        mask = self.mask
        return _gg.adjoint(self, g, lambda t: MaskedSelect.apply(t, mask=mask))


@register("masked_select")
def masked_select(input: Tensor, mask) -> Tensor:
    """1-d tensor of the elements of ``input`` where ``mask`` (broadcast) is True."""
    m = _mask_arg("masked_select", mask, input.array, False)
    return MaskedSelect.apply(input, mask=m)


# ---------------------------------------------------------------------------- take / take_along_dim
class TakeAlong(Function):
    """``np.take_along_axis`` on the broadcast input; backward scatter-adds, then reduces."""

    save_inputs = ()

    def forward(self, a, index=None, dim=0, bshape=None):
        xp = get_array_module(a)
        self.a_shape, self.bshape = a.shape, bshape
        self.grid = _grid_index(index, dim)
        return xp.broadcast_to(a, bshape)[self.grid]

    def backward(self, g):
        out = get_array_module(g).zeros(self.bshape, g.dtype)
        _add_at(out, self.grid, g)
        return unbroadcast(out, self.a_shape).reshape(self.a_shape)

    def backward_graph(self, g):
        grid, bshape = self.grid, self.bshape

        def take(t):
            t = t.expand(*bshape) if tuple(t.shape) != tuple(bshape) else t
            return Index.apply(t, idx=grid, unique=False, add_idx=grid)
        return _gg.adjoint(self, g, take)


@register("take_along_dim")
def take_along_dim(input: Tensor, indices, dim=None) -> Tensor:
    """Pick values along ``dim`` at ``indices`` (other dims broadcast); dim=None flattens both."""
    a = input.array
    xp = get_array_module(a)
    idx = _int_index(indices, "take_along_dim", xp)
    if dim is None:
        from .shape import reshape

        flat = reshape(input, (-1,))
        idx = idx.reshape(-1)
        _check_bounds(idx, flat.array.size, 0, allow_negative=False)
        return TakeAlong.apply(flat, index=_to_xp(idx, xp), dim=0, bshape=flat.array.shape)
    d = wrap_dim(dim, a.ndim)
    if idx.ndim != a.ndim:
        raise RuntimeError(
            f"take_along_dim(): input and indices should have the same number of dimensions, but "
            f"got {a.ndim} dimensions for input (shape {tuple(a.shape)}), and {idx.ndim} "
            f"dimensions for indices (shape {tuple(idx.shape)})"
        )
    try:
        other = np.broadcast_shapes(a.shape[:d] + (1,) + a.shape[d + 1:], idx.shape[:d] + (1,) + idx.shape[d + 1:])
    except ValueError:
        raise RuntimeError(
            f"take_along_dim(): input of shape {tuple(a.shape)} and indices of shape "
            f"{tuple(idx.shape)} do not broadcast outside dim {d}"
        ) from None
    _check_bounds(idx, a.shape[d], d, allow_negative=False)
    bshape = other[:d] + (a.shape[d],) + other[d + 1:]
    ishape = other[:d] + (idx.shape[d],) + other[d + 1:]
    idx = xp.broadcast_to(_to_xp(idx, xp), ishape)
    return TakeAlong.apply(input, index=idx, dim=d, bshape=bshape)


@register("take")
def take(input: Tensor, index) -> Tensor:
    """``input.flatten()[index]`` (the result has ``index``'s shape; negatives wrap)."""
    from .shape import reshape

    idx = _int_index(index, "take", get_array_module(input.array))
    flat = reshape(input, (-1,))
    _check_bounds(idx, flat.array.size, 0, allow_negative=True)
    return getitem(flat, idx if idx.ndim else int(idx))


# ---------------------------------------------------------------------------- embedding
class Embedding(Function):
    """``weight[ids]``; backward accumulates ``g`` rows into a zero ``(V, D)`` gradient, or,
    with ``sparse``, gives the rows as a sparse gradient (``autograd/sparse_grad.py``)."""

    save_inputs = ()

    def forward(self, w, ids=None, padding_idx=None, scale_grad_by_freq=False, sparse=False):
        self.ids, self.w_shape, self.pad, self.scale = ids, w.shape, padding_idx, scale_grad_by_freq
        self.sparse = sparse
        self.fused = w.ndim == 2 and kernels.usable(w)  # backward by kernels/embedding.py
        return get_array_module(w).take(w, ids, axis=0)  # ids.shape + (D,)

    def backward(self, g):
        xp = get_array_module(g)
        V, D = self.w_shape[0], self.w_shape[1:]
        ids = self.ids.reshape(-1)
        g2 = g.reshape((ids.size,) + D)
        if self.scale:
            counts = xp.bincount(ids, minlength=V)
            g2 = g2 / counts[ids].reshape((-1,) + (1,) * len(D)).astype(g.dtype)
        if self.sparse and self.scale:  # torch's refusal, also at backward
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients "
                               "(use sparse=False, or scale_grad_by_freq=False)")
        if self.sparse and sparse_grad_wanted(self._edges[0]):
            return rows_of(ids, g2, self.w_shape, self.pad)
        if self.pad is not None:
            keep = ids != self.pad
            ids, g2 = ids[keep], g2[keep]
        if self.fused and kernels.usable(g2):  # np.add.at's sums in its order, vectorised
            return _emb_kernels.embedding_backward(ids, g2, V)
        gw = xp.zeros(self.w_shape, g.dtype)
        _add_at(gw, ids, g2)
        return gw

    def backward_graph(self, g):
        # linear in g with the ids fixed: gather <-> scatter (ops/_grad_graph.py); imported
        # here so that this class's double backward stays one self-contained addition
        from ._grad_graph import linear_adjoint

        return linear_adjoint(self, g)

    def linear_forward(self, h):
        """The rows of ``h`` (the weight's shape) that the ids pick, scaled and masked as
        ``backward`` scales and masks the gradient (its adjoint)."""
        xp = get_array_module(h)
        rows = xp.take(h, self.ids, axis=0)  # ids.shape + (D,)
        tail = (1,) * (h.ndim - 1)
        if self.scale:
            counts = xp.bincount(self.ids.reshape(-1), minlength=self.w_shape[0])
            rows = rows / counts[self.ids].reshape(self.ids.shape + tail).astype(h.dtype)
        if self.pad is not None:
            rows = rows * (self.ids != self.pad).reshape(self.ids.shape + tail)
        return rows.astype(h.dtype, copy=False)


def renorm_rows_(weight: Tensor, ids, max_norm: float, norm_type: float) -> None:
    """Scale the rows of ``weight`` that ``ids`` names down to norm ``max_norm`` where longer
    (in place, without autograd: PyTorch's ``embedding_renorm_``)."""
    w = weight.array
    xp = get_array_module(w)
    rows = xp.unique(ids)
    if not rows.size:  # no index: nothing to renormalise (the reshape below needs a row)
        return
    sel = w[rows]
    norms = xp.linalg.norm(sel.astype(np.float64).reshape(len(rows), -1), ord=norm_type, axis=1)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    w[rows] = sel * scale[:, None]
    weight._version_counter[0] += 1


@register("embedding")
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``F.embedding(input, weight, ...)``: rows of ``weight`` (``(V, D)``) picked by the
    integer ``input``; the output has shape ``input.shape + (D,)``.

    Also accepts ``torch.embedding``'s order ``(weight, input)`` (detected from the dtypes).
    ``padding_idx`` rows get no gradient; ``max_norm`` renormalises the referenced rows of
    ``weight`` in place (without autograd); ``sparse=True`` makes the weight's ``.grad`` a
    sparse COO tensor of the rows used (``autograd/sparse_grad.py``: when the weight is a
    leaf without post-accumulate hooks; else the gradient stays dense).
    """
    if (isinstance(input, Tensor) and input.array.dtype.kind in "fV" and isinstance(weight, Tensor)
            and weight.array.dtype.kind in "iu"):
        input, weight = weight, input
    w = weight.array
    xp = get_array_module(w)
    dt = getattr(getattr(input, "array", None), "dtype", None)
    if dt is not None and dt not in (np.int64, np.int32):  # torch's check, its exception type
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {input.dtype} instead (while checking "
                           "arguments for embedding); convert the indices with .long()")
    ids = _int_index(input, "embedding", xp)
    if w.ndim != 2:
        raise RuntimeError(f"embedding(): weight must be 2-d (num_embeddings, embedding_dim), got shape {tuple(w.shape)}")
    V = w.shape[0]
    _check_bounds(ids, V, 0, allow_negative=False)
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise ValueError(f"embedding(): padding_idx {padding_idx} must be within num_embeddings ({V})")
        padding_idx = padding_idx + V if padding_idx < 0 else padding_idx
    ids = _to_xp(ids, xp)
    if max_norm is not None:
        renorm_rows_(weight, ids, max_norm, norm_type)
    return Embedding.apply(weight, ids=ids, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq,
                           sparse=bool(sparse))


def sparse_grad_wanted(edge) -> bool:
    """Whether a sparse weight gradient may go down ``edge`` (a Function's packed edge): to a
    leaf whose gradient the engine accumulates itself. A non-leaf weight, or one with
    post-accumulate hooks (DDP, FSDP, the user's: they read dense arrays), gets it dense."""
    return isinstance(edge, Tensor) and not edge._post_hooks


# ---------------------------------------------------------------------------- nonzero / where
@register("nonzero")
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """Indices of the nonzero elements: ``(N, ndim)`` int64, or a tuple of ``ndim`` 1-d tensors."""
    a = input.array
    xp = get_array_module(a)
    if as_tuple:
        if a.ndim == 0:
            return (_wrap(xp.zeros(int(bool(a)), np.int64)),)
        return tuple(_wrap(i.astype(np.int64, copy=False)) for i in xp.nonzero(a))
    return _wrap(xp.argwhere(a).astype(np.int64, copy=False))


@register("argwhere")
def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


# ---------------------------------------------------------------------------- index_put / fill
def _index_put_args(input, indices, values):
    if not isinstance(indices, tuple | list):
        raise TypeError(f"index_put: indices must be a tuple of index tensors, got {type(indices).__name__}")
    idx, _, _, add_idx = _parse_index(tuple(indices), input.array)
    if idx is not None and add_idx is idx:  # bool masks only: expand for add.at
        xp = get_array_module(input.array)
        exp = []
        for it in idx:
            exp.extend(xp.nonzero(it) if _is_array(it) and it.dtype.kind == "b" else [it])
        add_idx = tuple(exp)
    if isinstance(values, Tensor):
        values = _to_input_device(values, input)
        if values.array.dtype != input.array.dtype:
            _check_index_put_dtype(input, idx, values)
            from .conversion import to_dtype

            values = to_dtype(values, input.dtype)
    else:
        values = _to_input_device(Tensor(np.asarray(values), dtype=input.dtype), input)
    return idx, add_idx, values


@register("index_put")
def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values`` (``+=`` with repeated indices adding up when
    ``accumulate``)."""
    idx, add_idx, values = _index_put_args(input, indices, values)
    return IndexPut.apply(input, values, idx=idx, accumulate=accumulate, add_idx=add_idx)


@register("index_put_")
def index_put_(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    idx, add_idx, values = _index_put_args(input, indices, values)
    return _run_inplace(input, "index_put_", IndexPut, values, idx=idx, accumulate=accumulate, add_idx=add_idx)


class IndexFill(Function):
    """Fill the slices ``index`` of ``dim`` with ``value``. Backward: ``a`` gets ``g`` zeroed
    there; a tensor ``value`` gets the sum of ``g`` there."""

    save_inputs = ()

    def forward(self, a, value, index=None, dim=0, inplace=False):
        self.idx = (slice(None),) * dim + (index, Ellipsis)
        out = a if inplace else a.copy()
        out[self.idx] = value
        return out

    def backward(self, g):
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = g.copy()
            ga[self.idx] = 0
        if self.needs_input_grad[1]:
            xp = get_array_module(g)  # asarray: NumPy's sum gives a scalar, CuPy's a 0-d array
            gv = xp.asarray(g[(*self.idx[:-2], xp.unique(self.idx[-2]), Ellipsis)].sum(), dtype=g.dtype)
        return ga, gv

    def backward_graph(self, g):
        ga = gv = None
        dim, index = len(self.idx) - 2, self.idx[-2]
        if self.needs_input_grad[0]:
            ga = IndexFill.apply(g, 0.0, index=index, dim=dim)
        if self.needs_input_grad[1]:
            xp = get_array_module(g.array)
            gv = IndexSelect.apply(g, index=xp.unique(index), dim=dim).sum()
        return ga, gv


def _index_fill_args(op, input, dim, index, value):
    idx, d = _vector_index(op, index, input.array, dim)
    if input.array.ndim == 0:
        raise RuntimeError(f"{op}(): 0-dim input is not supported; unsqueeze it to 1-d first")
    return idx, d, _fill_value(op, value, input)


@register("index_fill")
def index_fill(input: Tensor, dim: int, index, value) -> Tensor:
    """Copy of ``input`` with the entries at ``index`` along ``dim`` set to ``value``."""
    idx, d, value = _index_fill_args("index_fill", input, dim, index, value)
    return IndexFill.apply(input, value, index=idx, dim=d)


@register("index_fill_")
def index_fill_(input: Tensor, dim: int, index, value) -> Tensor:
    idx, d, value = _index_fill_args("index_fill_", input, dim, index, value)
    return _run_inplace(input, "index_fill_", IndexFill, value, index=idx, dim=d)


def _repeat_index(r, xp):
    """``arange(len(r)).repeat(r)`` as int64 on ``r``'s device (``xp``). CuPy's repeat refuses
    array counts, so there each output position finds its element in the cumulative counts
    (one sync, for the total: the output size depends on the data, as in PyTorch)."""
    if xp is np:
        return np.repeat(np.arange(r.size, dtype=np.int64), r)
    if r.size and int(r.min()) < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    ends = xp.cumsum(r)
    total = int(ends[-1]) if r.size else 0
    return xp.searchsorted(ends, xp.arange(total), side="right").astype(np.int64, copy=False)


@register("repeat_interleave")
def repeat_interleave(input: Tensor, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (flattened when ``dim`` is None).

    Implemented as ``index_select`` with ``arange(n).repeat(repeats)``, so backward
    accumulates. ``repeat_interleave(repeats_tensor)`` alone returns those indices.
    """
    if repeats is None:
        xp = get_array_module(input.array) if isinstance(input, Tensor) else np
        r = _int_index(input, "repeat_interleave", xp)
        return _wrap(_repeat_index(r.reshape(-1), xp))
    if dim is None:
        from .shape import reshape

        input, d = reshape(input, (-1,)), 0
    else:
        d = wrap_dim(dim, input.array.ndim)
    xp = get_array_module(input.array)
    n = input.array.shape[d] if input.array.ndim else 1
    if isinstance(repeats, Tensor | np.ndarray | list | tuple) or is_device_array(repeats):
        r = _int_index(repeats, "repeat_interleave", xp).reshape(-1)
        if r.size == 1:
            r = int(r[0])  # one count for every element
        elif r.size != n:
            raise RuntimeError(
                f"repeat_interleave: repeats must have the same size as input along dim {d}: "
                f"got {r.size} repeats for size {n}"
            )
        elif r.size and int(r.min()) < 0:
            raise RuntimeError("repeat_interleave: repeats can not be negative")
    else:
        r = int(repeats)
    if isinstance(r, int):
        if r < 0:
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        idx = xp.repeat(xp.arange(n, dtype=np.int64), r)
    else:  # a host count array for device data: the indices are made on the host, then copied
        idx = _to_xp(_repeat_index(r, get_array_module(r)), xp)
    if input.array.ndim == 0:
        from .shape import reshape

        input = reshape(input, (1,))
    return IndexSelect.apply(input, index=idx, dim=d)


@register("one_hot")
def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """``F.one_hot``: int64 tensor of shape ``tensor.shape + (num_classes,)``."""
    idx = tensor.array if isinstance(tensor, Tensor) else np.asarray(tensor)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(
            f"one_hot is only applicable to index tensor of integer dtype, got {_dtype_name(idx)}; "
            "use .long()"
        )
    if num_classes == -1:
        if not idx.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")  # torch's
        num_classes = int(idx.max()) + 1
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num_classes):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise RuntimeError(f"one_hot: class values must be in [0, {num_classes}), got {bad}")
    xp = get_array_module(idx)
    out = xp.zeros(idx.shape + (num_classes,), np.int64)
    xp.put_along_axis(out, idx[..., None].astype(np.int64), 1, axis=-1)
    return _wrap(out)


__all__ += ["index_put", "index_put_", "index_fill", "index_fill_", "repeat_interleave", "one_hot"]
