"""Shape ops: reshape/view, permute/transpose, squeeze/unsqueeze, flatten/unflatten, expand,
repeat/tile, cat/stack, split/chunk/unbind/narrow, pad, flip/roll, tril/triu, movedim.

Views: where the result is a NumPy view of the input (view, reshape without copy,
permute, transpose, squeeze, unsqueeze, flatten, expand, narrow, split, chunk, unbind,
movedim) the output shares the input's version counter (``out._version_counter = input._version_counter``),
so an in-place change through either is seen by autograd's saved-tensor check. ``flip``
and ``roll`` return new memory, as in PyTorch. ``expand`` is a read-only broadcast view.

Backward rules (all on raw arrays): reshape-like ops reshape the gradient back; permute
applies the inverse permutation; expand sums over broadcast dims; repeat/tile reshape the
gradient to ``(r0, s0, r1, s1, ...)`` and sum the ``r`` axes; cat/split/stack/unbind are
each other's backward; pad's backward slices (constant) or scatter-adds (reflect,
replicate, circular) through the index map used in forward.

``cat`` / ``stack`` take torch's ``out=``: the result is written into ``out`` (resized when its
shape differs, with torch's deprecation warning if it had elements), refused when an input
requires grad or the result's dtype cannot be cast to ``out``'s, as torch. DataLoader's
collate writes a batch into a shared-memory buffer this way.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..autograd.out_arg import copy_into
from ..backend import get_array_module, promote_types
from ..backend.dtypes import _SCALAR_TYPE_NAMES
from ..backend.user_warning import first_time
from . import _grad_graph as _gg
from ._add_at import add_at
from ._util import index_scalar, unbroadcast, wrap_dim

__all__ = [
    "reshape", "view", "permute", "transpose", "swapaxes", "swapdims", "t", "flatten",
    "unflatten", "squeeze", "unsqueeze", "expand", "expand_as", "broadcast_to",
    "broadcast_tensors", "repeat", "tile", "cat", "concat", "concatenate", "stack", "hstack",
    "vstack", "split", "chunk", "unbind", "narrow", "pad", "flip", "fliplr", "flipud", "roll",
    "tril", "triu", "movedim", "moveaxis", "ravel",
]


# ---------------------------------------------------------------------------- helpers
def _sizes(args) -> tuple:
    """``f(x, 2, 3)`` and ``f(x, (2, 3))`` / ``f(x, [2, 3])`` -> ``(2, 3)``."""
    if len(args) == 1 and not isinstance(args[0], int | np.integer):
        a = args[0]
        if isinstance(a, Tensor):
            return tuple(int(v) for v in a.array.reshape(-1).tolist())
        return tuple(int(v) for v in a)
    return tuple(int(v) for v in args)


def _keyword_sizes(op: str, args: tuple, value, name: str) -> tuple:
    """The varargs sizes of ``op``, or its keyword form ``name=value`` (``reshape(x, shape=...)``)."""
    if value is None:
        return args
    if args:
        raise TypeError(f"{op}() got {name} both positionally and as {name}=; pass one")
    return (value,)


def _share(out: Tensor, src: Tensor) -> Tensor:
    """Make ``out`` (a NumPy view of ``src``) share ``src``'s version counter, and record the
    tensor whose memory it views (``out._base``, PyTorch's: the root of a chain of views), so
    an in-place op on the view also updates that tensor (``Tensor._inplace``)."""
    out._version_counter = src._version_counter
    if out is not src:
        out._base = src._base if src._base is not None else src
    return out


def _infer_shape(shape: tuple, numel: int) -> tuple:
    """Resolve one ``-1`` in ``shape`` from ``numel``; raise PyTorch's error on a mismatch."""
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"only one dimension can be inferred (-1), got shape {list(shape)}")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} in {list(shape)}; sizes must be >= 0")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[: neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# ---------------------------------------------------------------------------- reshape family
class Reshape(Function):
    """``a.reshape(shape)``; ``strict`` (view semantics) refuses to copy."""

    save_inputs = ()

    def forward(self, a, shape=None, strict=False):
        self.in_shape = a.shape
        if strict and not a.flags.c_contiguous:
            xp = get_array_module(a)
            try:
                return xp.reshape(a, shape, copy=False)
            except ValueError:
                raise RuntimeError(
                    f"view size is not compatible with input tensor's size and stride (at least "
                    f"one dimension spans across two contiguous subspaces): cannot view shape "
                    f"{tuple(a.shape)} as {tuple(shape)} without a copy. Use .reshape(...) instead "
                    "(or call .contiguous() first)."
                ) from None
        return a.reshape(shape)

    def backward(self, g):
        return g.reshape(self.in_shape)

    def backward_graph(self, g):
        return g.reshape(self.in_shape)


def _reshape(t: Tensor, shape: tuple, strict: bool, node: str | None = None) -> Tensor:
    """``node``: the name torch gives the result's grad_fn (``SqueezeBackward1``...) where it
    is not ``ViewBackward0``; a reshape that has to copy is torch's ``UnsafeViewBackward0``."""
    a = t.array
    if a.shape == shape:
        out = Reshape.apply(t, shape=shape, strict=True)
        if node is not None and out.grad_fn is not None:
            out.grad_fn._torch_name = node
        return _share(out, t)
    out = Reshape.apply(t, shape=shape, strict=strict)
    view = strict or _shares(out.array, a)
    if out.grad_fn is not None:
        if not view:
            node = "UnsafeViewBackward0"
        if node is not None:
            out.grad_fn._torch_name = node
    if view:
        _share(out, t)
    return out


def _shares(x, y) -> bool:
    xp = get_array_module(x)
    return bool(xp.may_share_memory(x, y))


@register("reshape")
def reshape(input: Tensor, *sizes, shape=None) -> Tensor:
    """``torch.reshape``: a view when the strides allow it, else a copy. One ``-1`` is inferred.
    ``reshape(x, shape=(2, 3))``: torch's keyword form."""
    if shape is not None:
        sizes = _keyword_sizes("reshape", sizes, shape, "shape")
    shape = _infer_shape(_sizes(sizes), input.array.size)
    return _reshape(input, shape, strict=False)


@register("view")
def view(input: Tensor, *shape) -> Tensor:
    """``Tensor.view``: like reshape but never copies (raises when the strides forbid it)."""
    shape = _infer_shape(_sizes(shape), input.array.size)
    return _reshape(input, shape, strict=True)


@register("view_dtype")
def view_dtype(input: Tensor, dtype) -> Tensor:
    """``Tensor.view(dtype)``: reinterpret the bytes (shares memory; not differentiable unless
    the dtype is unchanged)."""
    from ..autograd import _wrap
    from ..backend import as_dtype

    d = as_dtype(dtype)
    if d.np == input.array.dtype:
        return _share(Reshape.apply(input, shape=input.array.shape, strict=True), input)
    try:
        arr = input.array.view(d.np)
    except ValueError as e:
        raise RuntimeError(
            f"cannot view a tensor of dtype {input.dtype} and shape {tuple(input.shape)} as "
            f"{d}: {e}. Make it contiguous, or make the last dimension divisible by the size ratio."
        ) from None
    return _wrap(arr, version=input._version_counter)


@register("ravel")
def ravel(input: Tensor) -> Tensor:
    return reshape(input, (-1,))


@register("flatten")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a 0-d tensor becomes 1-d)."""
    if not isinstance(input, Tensor) and getattr(input, "is_quantized", False):
        # a converted model's QuantizedTensor (shardflow.quant, a layer above): its own
        # flatten keeps the integers and qparams (torch.flatten(x, 1) in quantizable ResNets)
        return input.flatten(start_dim, end_dim)
    shape = input.array.shape
    nd = len(shape)
    if nd == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError(f"flatten() has invalid args: start_dim ({start_dim}) cannot come after end_dim ({end_dim})")
    if s == e:
        return input
    new = shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]
    return _reshape(input, new, strict=False)


@register("unflatten")
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one ``-1`` allowed)."""
    shape = input.array.shape
    d = wrap_dim(dim, len(shape))
    sizes = tuple(int(s) for s in sizes)
    try:
        sizes = _infer_shape(sizes, shape[d])
    except RuntimeError:
        raise RuntimeError(
            f"unflatten: provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({shape[d]}) in the input tensor of shape {tuple(shape)}"
        ) from None
    return _reshape(input, shape[:d] + sizes + shape[d + 1:], strict=False)


@register("squeeze")
def squeeze(input: Tensor, dim=None) -> Tensor:
    """Remove size-1 dims (all of them, or those in ``dim``: an int or a tuple; dims whose
    size is not 1 are left alone, as in PyTorch)."""
    shape = input.array.shape
    nd = len(shape)
    # torch's three squeeze overloads name their nodes apart
    if dim is None:
        dims, node = set(range(nd)), "SqueezeBackward0"
    elif isinstance(dim, int | np.integer):
        dims, node = {wrap_dim(int(dim), nd)}, "SqueezeBackward1"
    else:
        dims, node = {wrap_dim(int(d), nd) for d in dim}, "SqueezeBackward2"
    new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    return _reshape(input, new, strict=True, node=node)


@register("unsqueeze")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``)."""
    shape = input.array.shape
    d = wrap_dim(dim, len(shape) + 1)
    return _reshape(input, shape[:d] + (1,) + shape[d:], strict=True, node="UnsqueezeBackward0")


# ---------------------------------------------------------------------------- permute family
class Permute(Function):
    save_inputs = ()

    def forward(self, a, dims=None):
        self.dims = dims
        return a.transpose(dims)

    def backward(self, g):
        # the inverse permutation as Python ints, not a NumPy array handed to a device array's
        # transpose; for a few dims this is also ~4x cheaper than np.argsort
        return g.transpose(sorted(range(len(self.dims)), key=self.dims.__getitem__))

    def backward_graph(self, g):
        return g.permute(*sorted(range(len(self.dims)), key=self.dims.__getitem__))


@register("permute")
def permute(input: Tensor, *sizes, dims=None) -> Tensor:
    """Reorder dims (a view). ``permute(x, dims=(1, 0))``: torch's keyword form."""
    dims = _sizes(sizes if dims is None else _keyword_sizes("permute", sizes, dims, "dims"))
    nd = input.array.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(): number of dims don't match: the tensor has {nd} dimensions "
            f"(shape {tuple(input.shape)}) but dims has {len(dims)} entries ({list(dims)})"
        )
    norm = tuple(wrap_dim(d, nd) for d in dims)
    if len(set(norm)) != nd:
        raise RuntimeError(f"permute(): dims {list(dims)} repeat a dimension; pass each dim once")
    return _share(Permute.apply(input, dims=norm), input)


@register("transpose", "swapdims")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims (a view)."""
    nd = input.array.ndim
    if nd == 0:
        return _reshape(input, (), strict=True)
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    perm = list(range(nd))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return _share(Permute.apply(input, dims=tuple(perm)), input)


@register("swapaxes")
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``torch.swapaxes``: NumPy's name for ``transpose``, with NumPy's ``axis0``/``axis1``."""
    return transpose(input, axis0, axis1)
swapdims = transpose


@register("t")
def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims."""
    nd = input.array.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D; use transpose(dim0, dim1) or .mT")
    if nd < 2:
        return _reshape(input, input.array.shape, strict=True)
    return transpose(input, 0, 1)


@register("movedim", "moveaxis")
def movedim(input: Tensor, source, destination) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (ints or sequences; a view)."""
    nd = input.array.ndim
    src = (source,) if isinstance(source, int | np.integer) else tuple(source)
    dst = (destination,) if isinstance(destination, int | np.integer) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    src = [wrap_dim(int(d), nd) for d in src]
    dst = [wrap_dim(int(d), nd) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {src} or destination {dst}")
    if nd == 0:  # a 0-d tensor takes dim 0 / -1 and has nothing to move
        src, dst = [], []
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _share(Permute.apply(input, dims=tuple(order)), input)


moveaxis = movedim


# ---------------------------------------------------------------------------- expand / repeat
class Expand(Function):
    save_inputs = ()

    def forward(self, a, shape=None):
        self.in_shape = a.shape
        return get_array_module(a).broadcast_to(a, shape)

    def backward(self, g):
        return unbroadcast(g, self.in_shape).reshape(self.in_shape)

    def backward_graph(self, g):
        return _gg.sum_to(g, self.in_shape)


@register("expand")
def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast to ``sizes`` without copying (``-1`` keeps a dim; new dims go in front)."""
    sizes = _sizes(sizes)
    shape = input.array.shape
    nd, ns = len(shape), len(sizes)
    if ns < nd:
        raise RuntimeError(
            f"expand: the number of sizes provided ({ns}) must be greater or equal to the number "
            f"of dimensions in the tensor ({nd}); got sizes {list(sizes)} for shape {tuple(shape)}"
        )
    out = []
    for i, s in enumerate(sizes):
        j = i - (ns - nd)
        if j < 0:
            if s < 0:
                raise RuntimeError(
                    f"expand: -1 is not allowed in a leading, non-existing dimension ({i}); got "
                    f"sizes {list(sizes)} for shape {tuple(shape)}"
                )
            out.append(s)
            continue
        if s == -1:
            s = shape[j]
        if shape[j] != 1 and shape[j] != s:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({shape[j]}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(shape)}"
            )
        out.append(s)
    out = tuple(out)
    if out == shape:
        return _reshape(input, shape, strict=True)
    return _share(Expand.apply(input, shape=out), input)


@register("expand_as")
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, tuple(other.shape))


@register("broadcast_to")
def broadcast_to(input: Tensor, size) -> Tensor:
    return expand(input, tuple(size))


@register("broadcast_tensors")
def broadcast_tensors(*tensors):
    """Expand every tensor to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    try:
        shape = np.broadcast_shapes(*(tuple(x.shape) for x in tensors))
    except ValueError:
        raise RuntimeError(
            f"broadcast_tensors: shapes {[tuple(x.shape) for x in tensors]} do not broadcast"
        ) from None
    return tuple(expand(x, shape) for x in tensors)


class Repeat(Function):
    save_inputs = ()

    def forward(self, a, reps=None):
        self.in_shape = a.shape
        self.reps = reps
        k = len(reps) - a.ndim
        self.padded = (1,) * k + a.shape
        return get_array_module(a).tile(a.reshape(self.padded), reps)

    def backward(self, g):
        inter = []
        for r, s in zip(self.reps, self.padded):
            inter += [r, s]
        g = g.reshape(inter).sum(axis=tuple(range(0, len(inter), 2)))
        return g.reshape(self.in_shape)

    def backward_graph(self, g):
        inter = []
        for r, s in zip(self.reps, self.padded):
            inter += [r, s]
        g = g.reshape(inter).sum(dim=tuple(range(0, len(inter), 2)))
        return g.reshape(self.in_shape)


@register("repeat")
def repeat(input: Tensor, *sizes) -> Tensor:
    """``Tensor.repeat``: tile the data ``sizes[i]`` times along dim ``i`` (copies)."""
    sizes = _sizes(sizes)
    if len(sizes) < input.array.ndim:
        raise RuntimeError(
            f"Number of dimensions of repeat dims ({len(sizes)}) can not be smaller than number "
            f"of dimensions of tensor ({input.array.ndim}); got repeats {list(sizes)} for shape "
            f"{tuple(input.shape)}"
        )
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"repeat: repeats must be non-negative, got {list(sizes)}")
    return Repeat.apply(input, reps=sizes)


@register("tile")
def tile(input: Tensor, *sizes, dims=None) -> Tensor:
    """``torch.tile``: like repeat, but ``dims`` shorter than ndim is padded with leading 1s.
    ``tile(x, dims=(2,))``: torch's keyword form."""
    dims = _sizes(sizes if dims is None else _keyword_sizes("tile", sizes, dims, "dims"))
    nd = input.array.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


# ---------------------------------------------------------------------------- cat / stack
class Cat(Function):
    """Concatenate along ``dim``; inputs listed in ``skip`` (legacy empty 1-d tensors) are left
    out and get an empty gradient."""

    save_inputs = ()

    def forward(self, *arrays, dim=0, skip=()):
        self.dim, self.skip = dim, skip
        self.empty = [(a.shape, a.dtype) for a in arrays]
        kept = [a for i, a in enumerate(arrays) if i not in skip]
        # split points as Python ints, not a NumPy array handed to the device split in
        # backward; also cheaper than np.cumsum for a few inputs
        self.bounds = list(itertools.accumulate(a.shape[dim] for a in kept))[:-1]
        return get_array_module(kept[0]).concatenate(kept, axis=dim)

    def backward(self, g):
        xp = get_array_module(g)
        parts = iter(xp.split(g, self.bounds, axis=self.dim))
        return tuple(
            xp.zeros(shape, g.dtype) if i in self.skip else next(parts)
            for i, (shape, _) in enumerate(self.empty)
        )

    def backward_graph(self, g):
        bounds = [0] + self.bounds + [g.shape[self.dim]]
        pre = (slice(None),) * self.dim
        parts = iter(g[pre + (slice(lo, hi),)] for lo, hi in zip(bounds, bounds[1:]))
        xp = get_array_module(g.array)
        return tuple(
            _wrap(xp.zeros(shape, g.array.dtype)) if i in self.skip else next(parts)
            for i, (shape, _) in enumerate(self.empty)
        )


def _promote_all(tensors):
    d = tensors[0].dtype
    for x in tensors[1:]:
        if x.dtype is not d:
            d = promote_types(d, x.dtype)
    if all(x.dtype is d for x in tensors):
        return list(tensors)
    from .conversion import to_dtype

    return [to_dtype(x, d) for x in tensors]


def _tensor_list(tensors, op: str):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}() expects a sequence of Tensors (a list or tuple), got a single Tensor")
    tensors = list(tensors)
    if not tensors:  # torch's types and texts: cat's Python-level ValueError, the others' RuntimeError
        if op == "cat":
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return tensors


def _into_out(result: Tensor, out, op: str) -> Tensor:
    """torch's ``out=`` for cat/stack (module docstring)."""
    if out is None:
        return result
    if result.requires_grad:
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    r, o = result.dtype, out.dtype
    if r._category > o._category or (o._category == 0 and r._category > 0):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                           f"{_SCALAR_TYPE_NAMES[o.name]}")
    copy_into(result, out)
    return out


@register("cat", "concat", "concatenate")
def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join tensors along an existing dim; dtypes are promoted. Legacy empty 1-d tensors
    (shape ``(0,)``) are skipped, as in PyTorch."""
    tensors = _tensor_list(tensors, "cat")
    skip = tuple(i for i, x in enumerate(tensors) if x.array.ndim == 1 and x.array.shape[0] == 0)
    if len(skip) == len(tensors):
        skip = skip[1:]
    kept = [x for i, x in enumerate(tensors) if i not in skip]
    ref = kept[0].array
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated; unsqueeze it first")
    d = wrap_dim(dim, ref.ndim)
    for x in kept:
        s = x.array.shape
        if len(s) != ref.ndim or any(s[k] != ref.shape[k] for k in range(ref.ndim) if k != d):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {d}: cat() got shapes "
                f"{[tuple(y.shape) for y in tensors]}; shape {tuple(s)} does not match "
                f"{tuple(ref.shape)} outside dimension {d}"
            )
    return _into_out(Cat.apply(*_promote_all(tensors), dim=d, skip=skip), out, "cat")


concat = cat
concatenate = cat


class Stack(Function):
    save_inputs = ()

    def forward(self, *arrays, dim=0):
        self.dim = dim
        return get_array_module(arrays[0]).stack(arrays, axis=dim)

    def backward(self, g):
        g = get_array_module(g).moveaxis(g, self.dim, 0)
        return tuple(g[i] for i in range(g.shape[0]))

    def backward_graph(self, g):
        return tuple(g.unbind(self.dim))


@register("stack")
def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join equally-shaped tensors along a new dim ``dim``."""
    tensors = _tensor_list(tensors, "stack")
    ref = tensors[0].array.shape
    for i, x in enumerate(tensors):
        if x.array.shape != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                f"{list(x.array.shape)} at entry {i}"
            )
    d = wrap_dim(dim, len(ref) + 1)
    return _into_out(Stack.apply(*_promote_all(tensors), dim=d), out, "stack")


@register("hstack")
def hstack(tensors) -> Tensor:
    tensors = _tensor_list(tensors, "hstack")
    tensors = [x if x.array.ndim else reshape(x, (1,)) for x in tensors]
    return cat(tensors, 0 if tensors[0].array.ndim == 1 else 1)


@register("vstack")
def vstack(tensors) -> Tensor:
    tensors = _tensor_list(tensors, "vstack")
    tensors = [x if x.array.ndim >= 2 else reshape(x, (1, -1)) for x in tensors]
    return cat(tensors, 0)


# ---------------------------------------------------------------------------- split family
class SplitDim(Function):
    """Split ``a`` along ``dim`` at ``bounds`` into views (multi-output)."""

    save_inputs = ()

    def forward(self, a, bounds=None, dim=0):
        self.dim = dim
        xp = get_array_module(a)
        return tuple(xp.split(a, bounds, axis=dim))

    def backward(self, *grads):
        return get_array_module(grads[0]).concatenate(grads, axis=self.dim)

    def backward_graph(self, *grads):
        return _gg.op("cat")(list(grads), self.dim)


def _split_at(input: Tensor, sizes, d: int):
    bounds = list(np.cumsum(sizes)[:-1]) if len(sizes) else []
    if len(sizes) == 1:
        return (_reshape(input, input.array.shape, strict=True),)
    outs = SplitDim.apply(input, bounds=bounds, dim=d)
    for o in outs:
        _share(o, input)
    return outs


@register("split")
def split(tensor: Tensor, split_size_or_sections, dim: int = 0):
    """``torch.split``: chunks of ``split_size`` (the last may be smaller) or the listed sizes."""
    nd = tensor.array.ndim
    d = wrap_dim(dim, nd)
    n = tensor.array.shape[d]
    if isinstance(split_size_or_sections, Tensor) and split_size_or_sections.ndim == 0:
        split_size_or_sections = int(split_size_or_sections.item())  # torch's Tensor.split: int(t), floats too
    if isinstance(split_size_or_sections, int | np.integer):
        s = int(split_size_or_sections)
        if s <= 0 and n > 0:
            raise RuntimeError(f"split expects split_size be positive, but got split_size={s}")
        if n == 0:
            return (_reshape(tensor, tensor.array.shape, strict=True),)
        sizes = [s] * (n // s) + ([n % s] if n % s else [])
    else:
        sizes = [int(v) for v in split_size_or_sections]
        if sum(sizes) != n or any(v < 0 for v in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {d}), but got split_sizes={sizes}"
            )
    return _split_at(tensor, sizes, d)


@register("chunk")
def chunk(input: Tensor, chunks: int, dim: int = 0):
    """``torch.chunk``: pieces of size ``ceil(n / chunks)``; may return fewer than ``chunks``."""
    chunks = index_scalar(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.array.ndim)
    n = input.array.shape[d]
    if n == 0:
        return _split_at(input, [0] * chunks, d) if chunks > 1 else split(input, 1, d)
    size = -(-n // chunks)
    return split(input, size, d)


class Unbind(Function):
    save_inputs = ()

    def forward(self, a, dim=0):
        self.dim = dim
        m = get_array_module(a).moveaxis(a, dim, 0)
        return tuple(m[i] for i in range(m.shape[0]))

    def backward(self, *grads):
        return get_array_module(grads[0]).stack(grads, axis=self.dim)

    def backward_graph(self, *grads):
        return _gg.op("stack")(list(grads), self.dim)


@register("unbind")
def unbind(input: Tensor, dim: int = 0):
    """Slices along ``dim`` with that dim removed (views)."""
    d = wrap_dim(dim, input.array.ndim)
    if input.array.shape[d] == 0:
        return ()
    outs = Unbind.apply(input, dim=d)
    for o in outs:
        _share(o, input)
    return outs


class Slice(Function):
    """Basic (view) indexing ``a[idx]``; backward writes the gradient into zeros."""

    save_inputs = ()

    def forward(self, a, idx=None):
        self.in_shape, self.idx = a.shape, idx
        return a[idx]

    def backward(self, g):
        xp = get_array_module(g)
        out = xp.zeros(self.in_shape, g.dtype)
        out[self.idx] = g
        return out

    def backward_graph(self, g):
        idx = self.idx
        return _gg.adjoint(self, g, lambda t: Slice.apply(t, idx=idx))


@register("narrow")
def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """``input`` restricted to ``[start, start + length)`` along ``dim`` (a view)."""
    nd = input.array.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    n = input.array.shape[d]
    start, length = int(start), int(length)
    if not -n <= start <= n:
        raise IndexError(f"narrow(): start ({start}) out of range for dimension {d} with size {n}")
    if start < 0:
        start += n
    if length < 0 or start + length > n:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({n}) of dimension {d}"
        )
    idx = (slice(None),) * d + (slice(start, start + length), Ellipsis)
    return _share(Slice.apply(input, idx=idx), input)


# ---------------------------------------------------------------------------- pad
class PadConstant(Function):
    """Constant padding; negative pads crop. ``src``/``dst`` are the slices copied."""

    save_inputs = ()

    def forward(self, a, out_shape=None, src=None, dst=None, value=0):
        self.in_shape, self.src, self.dst = a.shape, src, dst
        xp = get_array_module(a)
        out = xp.full(out_shape, value, dtype=a.dtype)
        out[dst] = a[src]
        return out

    def backward(self, g):
        xp = get_array_module(g)
        out = xp.zeros(self.in_shape, g.dtype)
        out[self.src] = g[self.dst]
        return out

    def backward_graph(self, g):
        # the adjoint of "copy src into dst of a constant array" is linear in g; its own
        # derivative is the same padding with value 0
        shape, src, dst = self._out_shape, self.src, self.dst
        return _gg.adjoint(self, g, lambda t: PadConstant.apply(t, out_shape=shape, src=src, dst=dst))


class PadIndex(Function):
    """reflect / replicate / circular padding: gather along each padded dim with an index
    map; backward scatter-adds through the same maps in reverse order."""

    save_inputs = ()

    def forward(self, a, maps=None):
        xp = get_array_module(a)
        if xp is not np:  # the index maps are built on the host; copy them to the device once
            maps = tuple((d, xp.asarray(idx)) for d, idx in maps)
        self.maps, self.in_shape = maps, a.shape
        for d, idx in maps:
            a = xp.take(a, idx, axis=d)
        return a

    def backward(self, g):
        xp = get_array_module(g)
        for d, idx in reversed(self.maps):
            shape = list(g.shape)
            shape[d] = self.in_shape[d]
            runs = _runs(idx, 32)
            if runs is None:  # long replicated edges: one scatter-add, in index order
                if xp is np and d:
                    # the padded dim first, contiguous: whole rows for the scatter-add (a
                    # kernel with the kernels on) instead of a strided target; the same sums
                    moved = [shape[d]] + shape[:d] + shape[d + 1:]
                    out = np.zeros(moved, g.dtype)
                    add_at(out, idx, np.moveaxis(g, d, 0))
                    g = np.ascontiguousarray(np.moveaxis(out, 0, d))
                    continue
                out = xp.zeros(shape, g.dtype)
                add_at(xp.moveaxis(out, d, 0), idx, xp.moveaxis(g, d, 0))
                g = out
                continue
            out = xp.zeros(shape, g.dtype)
            # the map is a few runs of consecutive positions (the interior, the reflected or
            # wrapped edges): one strided slice addition per run, in the map's order, forms
            # each sum as a scatter-add in index order does (0 + first + second ...), bit for
            # bit, without a scatter over the whole tensor
            lead = (slice(None),) * d
            for j0, j1, i0, step in runs:
                stop = i0 + step * (j1 - j0)
                target = slice(i0, None if stop < 0 else stop, step)
                out[lead + (target,)] += g[lead + (slice(j0, j1),)]
            g = out
        return g

    def backward_graph(self, g):
        maps = self.maps
        return _gg.adjoint(self, g, lambda t: PadIndex.apply(t, maps=maps))


def _runs(idx, limit: int):
    """``idx`` (a pad's index map, on the host or the device) as runs ``(j0, j1, i0, step)``,
    taken greedily from the start: ``idx[j0:j1] == i0 + step * arange(j1 - j0)`` with ``step``
    1 or -1 (a run of one: 1); None past ``limit`` runs. Vectorised over the map (a 1-D
    signal's map is as long as the signal): a Python step per run, not per element."""
    idx = np.asarray(idx.get() if hasattr(idx, "get") else idx)
    n = idx.shape[0]
    diff = np.diff(idx)
    # exclusive ends (in diff positions) of the stretches of equal differences
    ends = np.append(np.flatnonzero(diff[1:] != diff[:-1]) + 1, diff.shape[0])
    runs, j0 = [], 0
    while j0 < n:
        if len(runs) == limit:
            return None
        step = int(diff[j0]) if j0 < n - 1 else 0
        if step in (1, -1):
            j1 = int(ends[np.searchsorted(ends, j0, side="right")]) + 1
        else:
            j1, step = j0 + 1, 1
        runs.append((j0, j1, int(idx[j0]), step))
        j0 = j1
    return runs


def _pad_map(mode: str, n: int, lo: int, hi: int, d: int):
    j = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, "
                f"but got: padding ({lo}, {hi}) at dimension {d} of size {n}"
            )
        if n == 1:
            return np.zeros_like(j)
        m = 2 * (n - 1)
        k = np.mod(j, m)
        return np.where(k < n, k, m - k)
    if mode == "replicate":
        if n == 0:
            raise RuntimeError(f"replicate padding of an empty dimension {d} is not possible")
        return np.clip(j, 0, n - 1)
    if mode == "circular":
        if lo > n or hi > n:
            raise RuntimeError(
                f"Padding value causes wrapping around more than once: padding ({lo}, {hi}) at "
                f"dimension {d} of size {n}; circular padding must be <= the dimension size"
            )
        return np.mod(j, n)
    raise NotImplementedError(
        f"pad: unknown mode {mode!r}; expected 'constant', 'reflect', 'replicate' or 'circular'"
    )


@register("pad")
def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    """``F.pad``: ``pad = (last_lo, last_hi, prev_lo, prev_hi, ...)`` pads the last
    ``len(pad) // 2`` dims, last dim first. Constant mode accepts negative pads (cropping)."""
    pad = tuple(int(p) for p in pad)
    shape = input.array.shape
    nd = len(shape)
    if len(pad) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, got pad={list(pad)}")
    k = len(pad) // 2
    if k > nd:
        raise RuntimeError(
            f"Padding length too large: pad={list(pad)} pads {k} dims but the input has only {nd} "
            f"(shape {tuple(shape)})"
        )
    pairs = {nd - 1 - i: (pad[2 * i], pad[2 * i + 1]) for i in range(k)}
    if mode == "constant":
        src, dst, out_shape = [], [], []
        for d in range(nd):
            lo, hi = pairs.get(d, (0, 0))
            n = shape[d]
            m = n + lo + hi
            if m < 0:
                raise RuntimeError(
                    f"pad: the resulting size of dimension {d} would be {m} (size {n}, padding "
                    f"({lo}, {hi})); negative pads may crop at most the whole dimension"
                )
            s0, s1 = max(-lo, 0), n - max(-hi, 0)
            s1 = max(s1, s0)
            d0 = max(lo, 0)
            length = max(min(s1 - s0, m - d0), 0)
            src.append(slice(s0, s0 + length))
            dst.append(slice(d0, d0 + length))
            out_shape.append(m)
        v = 0 if value is None else value
        return PadConstant.apply(input, out_shape=tuple(out_shape), src=tuple(src), dst=tuple(dst), value=v)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    maps = []
    for d in sorted(pairs):
        lo, hi = pairs[d]
        if lo < 0 or hi < 0:
            raise RuntimeError(f"pad: negative padding is only supported in constant mode, got ({lo}, {hi}) for mode {mode!r}")
        if lo == 0 and hi == 0:
            continue
        maps.append((d, _pad_map(mode, shape[d], lo, hi, d)))
    if not maps:
        return Reshape.apply(input, shape=shape)
    return PadIndex.apply(input, maps=tuple(maps))


# ---------------------------------------------------------------------------- flip / roll / tri
class Flip(Function):
    save_inputs = ()

    def forward(self, a, dims=None):
        self.dims = dims
        return get_array_module(a).flip(a, dims).copy()

    def backward(self, g):
        return get_array_module(g).flip(g, self.dims)

    def backward_graph(self, g):
        return Flip.apply(g, dims=self.dims)


@register("flip")
def flip(input: Tensor, *sizes, dims=None) -> Tensor:
    """Reverse the order along ``dims`` (copies, like PyTorch); ``flip(x, dims=(0,))``."""
    nd = input.array.ndim
    if dims is not None:
        sizes = _keyword_sizes("flip", sizes, dims, "dims")
    dims = tuple(sorted({wrap_dim(d, nd) for d in _sizes(sizes)}))
    return Flip.apply(input, dims=dims)


@register("fliplr")
def fliplr(input: Tensor) -> Tensor:
    if input.array.ndim < 2:
        raise RuntimeError("fliplr: input must be >= 2-d")
    return flip(input, (1,))


@register("flipud")
def flipud(input: Tensor) -> Tensor:
    if input.array.ndim < 1:
        raise RuntimeError("flipud: input must be >= 1-d")
    return flip(input, (0,))


class Roll(Function):
    save_inputs = ()

    def forward(self, a, shifts=None, dims=None):
        self.shifts, self.dims = shifts, dims
        return get_array_module(a).roll(a, shifts, axis=dims)

    def backward(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return get_array_module(g).roll(g, neg, axis=self.dims)

    def backward_graph(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return Roll.apply(g, shifts=neg, dims=self.dims)


@register("roll")
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Rotate elements along ``dims`` by ``shifts`` (flattened when ``dims`` is None)."""
    shifts, dims = index_scalar(shifts), index_scalar(dims)
    if dims is None:
        if not isinstance(shifts, int | np.integer):
            shifts = tuple(shifts)
            if len(shifts) != 1:
                raise RuntimeError(f"roll: with dims=None, shifts must be one int, got {list(shifts)}")
            shifts = shifts[0]
        return Roll.apply(input, shifts=int(shifts), dims=None)
    nd = input.array.ndim
    sh = (shifts,) if isinstance(shifts, int | np.integer) else tuple(shifts)
    dm = (dims,) if isinstance(dims, int | np.integer) else tuple(dims)
    if len(sh) != len(dm):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(dm)}")
    return Roll.apply(input, shifts=tuple(int(s) for s in sh), dims=tuple(wrap_dim(int(d), nd) for d in dm))


class Tri(Function):
    save_inputs = ()

    def forward(self, a, k=0, upper=False):
        self.k, self.upper = k, upper
        xp = get_array_module(a)
        return xp.triu(a, k) if upper else xp.tril(a, k)

    def backward(self, g):
        xp = get_array_module(g)
        return xp.triu(g, self.k) if self.upper else xp.tril(g, self.k)

    def backward_graph(self, g):
        return Tri.apply(g, k=self.k, upper=self.upper)


def _tri_check(input, name):
    if input.array.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions, got shape {tuple(input.shape)}")


@register("tril")
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements above the ``diagonal``-th diagonal of the last two dims."""
    _tri_check(input, "tril")
    return Tri.apply(input, k=int(diagonal), upper=False)


@register("triu")
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements below the ``diagonal``-th diagonal of the last two dims."""
    _tri_check(input, "triu")
    return Tri.apply(input, k=int(diagonal), upper=True)


# ---------------------------------------------------------------------------- more views / splits
@register("select")
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``input`` at position ``index`` of ``dim``, with that dim removed (a view)."""
    nd = input.array.ndim
    d = wrap_dim(dim, nd)
    n = input.array.shape[d]
    index = int(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {tuple(input.shape)} at dimension {d}")
    idx = (slice(None),) * d + (index, Ellipsis)
    return _share(Slice.apply(input, idx=idx), input)


@register("split_with_sizes")
def split_with_sizes(input: Tensor, split_sizes, dim: int = 0):
    return split(input, list(split_sizes), dim)


@register("tensor_split")
def tensor_split(input: Tensor, indices_or_sections=None, dim: int = 0, *, indices=None, sections=None):
    """``torch.tensor_split``: ``n`` sections (the first ``size % n`` one larger) or split
    points (negative ones from the end, then clamped to the dim size, as Python slices).
    ``sections=`` / ``indices=``: torch's keyword forms."""
    given = [v for v in (indices_or_sections, indices, sections) if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() takes exactly one of indices_or_sections, indices= or sections=, "
                        f"got {len(given)}")
    indices_or_sections = given[0]
    if sections is not None and not isinstance(sections, int | np.integer):
        raise TypeError(f"tensor_split(sections=) must be an int, got {type(sections).__name__}")
    d = wrap_dim(dim, input.array.ndim)
    n = input.array.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int | np.integer):
        k = int(indices_or_sections)
        if k <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {k}")
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    else:
        # each piece is input[edges[i]:edges[i + 1]] with Python's slice semantics: a
        # negative index counts from the end (it was clamped to 0, moving the split point)
        pts = [min(max(int(p) + n if int(p) < 0 else int(p), 0), n) for p in indices_or_sections]
        edges = [0] + pts + [n]
        sizes = [max(edges[i + 1] - edges[i], 0) for i in range(len(edges) - 1)]
        starts = edges[:-1]
        if any(starts[i] + sizes[i] != (starts[i + 1] if i + 1 < len(starts) else n) for i in range(len(sizes))):
            return tuple(narrow(input, d, min(s, n), z) for s, z in zip(starts, sizes))
    return _split_at(input, sizes, d)


class Diagonal(Function):
    save_inputs = ()

    def forward(self, a, offset=0, dim1=0, dim2=1):
        self.in_shape, self.args = a.shape, (offset, dim1, dim2)
        d = get_array_module(a).diagonal(a, offset, dim1, dim2)
        if isinstance(d, np.ndarray) and a.flags.writeable and not d.flags.writeable:
            d.flags.writeable = True  # torch's diagonal is a writable view (x.diagonal().add_(eps))
        return d

    def backward(self, g):
        xp = get_array_module(g)
        out = xp.zeros(self.in_shape, g.dtype)
        offset, d1, d2 = self.args
        m = xp.moveaxis(out, (d1, d2), (-2, -1))
        k = g.shape[-1]
        i = xp.arange(k) + max(-offset, 0)
        j = xp.arange(k) + max(offset, 0)
        m[..., i, j] = g
        return out

    def backward_graph(self, g):
        offset, d1, d2 = self.args
        return _gg.adjoint(self, g, lambda t: Diagonal.apply(t, offset=offset, dim1=d1, dim2=d2))


@register("diagonal")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The ``offset``-th diagonal of the (dim1, dim2) planes, as a new last dim (a read-only
    view)."""
    nd = input.array.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _share(Diagonal.apply(input, offset=int(offset), dim1=d1, dim2=d2), input)


class Unfold(Function):
    """Sliding windows of ``size`` every ``step`` along ``dim`` (a read-only view); backward
    adds each window offset's gradient back (a loop over ``size``, or over the windows when
    there are fewer of them; not over elements)."""

    save_inputs = ()

    def forward(self, a, dim=0, size=1, step=1):
        self.in_shape, self.dim, self.size, self.step = a.shape, dim, size, step
        xp = get_array_module(a)
        w = xp.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
        sl = (slice(None),) * dim + (slice(None, None, step), Ellipsis)
        return w[sl]

    def backward(self, g):
        xp = get_array_module(g)
        out = xp.zeros(self.in_shape, g.dtype)
        nw = g.shape[self.dim]
        pre = (slice(None),) * self.dim
        size, step = self.size, self.step
        if nw < size:
            # fewer windows than offsets (stft: 101 frames of 400): add whole windows, the
            # last first, so that each position still receives its terms in increasing offset
            # order (k = p - t * step grows as t falls): the same sums as the loop below
            windows = xp.moveaxis(g, -1, self.dim + 1)  # window t's values along dim: [pre + (t,)]
            for t in range(nw - 1, -1, -1):
                out[pre + (slice(t * step, t * step + size),)] += windows[pre + (t,)]
            return out
        for k in range(size):
            out[pre + (slice(k, k + step * (nw - 1) + 1, step),)] += g[..., k]
        return out

    def backward_graph(self, g):
        dim, size, step = self.dim, self.size, self.step
        return _gg.adjoint(self, g, lambda t: Unfold.apply(t, dim=dim, size=size, step=step))


@register("unfold")
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: windows of ``size`` taken every ``step`` along ``dimension``; the
    window becomes a new last dim."""
    nd = input.array.ndim
    d = wrap_dim(dimension, nd) if nd else 0
    n = input.array.shape[d] if nd else 1
    if size > n or size < 0:
        raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    if nd == 0:
        return reshape(input, (1,))
    return _share(Unfold.apply(input, dim=d, size=int(size), step=int(step)), input)


def _check_meshgrid_inputs(tensors) -> None:
    """torch's RuntimeErrors for what meshgrid cannot grid: no tensors, a tensor of more than
    one dim (its elements would silently become one axis), mixed dtypes."""
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList: pass at least one 0-d or 1-d tensor")
    for i, t in enumerate(tensors):
        if t.array.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a "
                               f"{t.array.ndim}-d tensor of shape {tuple(t.shape)} (tensor {i}); "
                               f"flatten it first if its elements are the coordinates")
    dtypes = [t.dtype for t in tensors]
    if any(d != dtypes[0] for d in dtypes):
        raise RuntimeError(f"meshgrid expects all tensors to have the same dtype, got {[str(d) for d in dtypes]}; "
                           f"convert them with .to(dtype) first")


@register("meshgrid")
def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids from 1-d tensors (views made with expand). ``indexing='xy'`` swaps
    the first two output dims, as in NumPy; without ``indexing`` it is ``'ij'`` with
    torch's UserWarning that the argument will be required (DETR's ``masks_to_boxes``), once per
    process as torch gives it."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    if indexing is None:
        if first_time("meshgrid_indexing"):  # torch's TORCH_WARN_ONCE: once per process
            warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                          "indexing argument.", UserWarning, stacklevel=3)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    _check_meshgrid_inputs(tensors)
    sizes = [int(t.array.size) for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(tensors):
        pos = i
        if swap and i < 2:
            pos = 1 - i
        shape = [1] * len(tensors)
        shape[pos] = -1
        out.append(expand(reshape(x, tuple(shape)), tuple(sizes)))
    return tuple(out)


__all__ += ["select", "split_with_sizes", "tensor_split", "diagonal", "unfold", "meshgrid"]
