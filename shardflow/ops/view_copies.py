"""The ``*_copy`` forms of the view ops (``torch.t_copy``, ``view_copy``, ``split_copy`` ...):
the view op's result in new contiguous memory (never a view of the input), differentiable
through the view op itself, with PyTorch's ``out=`` (one tensor, or a list for the ops that
return several: ``split_copy``, ``split_with_sizes_copy``, ``unbind_copy``; those return None
when given ``out``, as in PyTorch).

Each is ``clone(view_op(...))``: the view op checks its arguments with its own messages and
carries the gradient, ``Clone`` copies (its backward is the identity). ``out=`` resizes
``out`` to the result's shape and refuses a dtype other than the result's, as PyTorch's
generated ``*_copy.out`` kernels do.
"""

from __future__ import annotations

import inspect

from ..autograd import Tensor, _wrap
from ..autograd import grad_mode as _gm
from ..autograd.dispatch import register
from ..backend import dtype as _dtype
from .complex_ops import view_as_complex, view_as_real
from .conversion import clone
from .shape import (
    diagonal,
    expand,
    permute,
    reshape,
    select,
    split,
    split_with_sizes,
    squeeze,
    t,
    transpose,
    unbind,
    unfold,
    unsqueeze,
    view,
    view_dtype,
)
from .strided import as_strided

__all__ = [
    "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "indices_copy",
    "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy",
    "t_copy", "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "values_copy", "view_copy",
    "view_as_complex_copy", "view_as_real_copy",
]

# PyTorch's C++ type names, as its "Expected out tensor to have dtype ..." message spells them
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _write(result: Tensor, out: Tensor, name: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES.get(result.dtype.name, result.dtype.name)}, "
                           f"but got {_CPP_NAMES.get(out.dtype.name, out.dtype.name)} instead")
    if _gm.is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic differentiation, but one "
            "of the arguments requires grad. Call it without out= (y = f(x)) or under torch.no_grad()")
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(tuple(result.shape))
    with _gm.no_grad():
        out.copy_(result)
    return out


def copy_result(result: Tensor, out=None, name: str = "copy"):
    """A view op's ``result`` as new contiguous memory, or written into ``out``."""
    if out is not None:
        return _write(result, out, name)
    return clone(result)


def _copies(results, out, name: str):
    """The list form: new tensors, or each written into ``out[i]`` (then None)."""
    results = tuple(results)
    if out is None:
        return tuple(clone(r) for r in results)
    if len(out) != len(results):
        raise RuntimeError(f"{name}: expected out to have {len(results)} tensors, got {len(out)}")
    for r, o in zip(results, out, strict=True):
        _write(r, o, name)
    return None


def _make(name: str, view_op, doc: str):
    def op(input: Tensor, *args, out=None, **kwargs) -> Tensor:
        return copy_result(view_op(input, *args, **kwargs), out, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``torch.{name}``: {doc} as a new tensor (not a view)."
    op.__signature__ = _with_out(view_op)  # view_op's keywords (it refuses others) and out
    return register(name)(op)


def _with_out(view_op) -> inspect.Signature:
    ps = [p for p in inspect.signature(view_op).parameters.values() if p.name != "out"]
    out = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    at = next((i for i, p in enumerate(ps) if p.kind is p.VAR_KEYWORD), len(ps))
    return inspect.Signature([*ps[:at], out, *ps[at:]])


def _alias(input: Tensor) -> Tensor:
    return view(input, tuple(input.shape))


def _detach(input: Tensor) -> Tensor:
    return _wrap(input.array)


def _slice(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    nd = input.ndim
    d = dim % nd if nd else 0
    return input[(slice(None),) * d + (slice(start, end, step),)]


def _expand(input: Tensor, size, *, implicit: bool = False) -> Tensor:
    return expand(input, tuple(size))


def _view(input: Tensor, size=None, *, dtype=None) -> Tensor:
    if dtype is not None:  # view_copy(x, dtype=torch.int32): torch's keyword overload
        if size is not None:
            raise TypeError("view_copy() takes a size or dtype=, not both")
        size = dtype
    if size is None:
        raise TypeError("view_copy() missing 1 required argument: 'size' (or dtype=)")
    if isinstance(size, _dtype):
        return view_dtype(input, size)
    return reshape(input, size)  # view_copy accepts any input layout (it copies anyway)


def _sparse_part(part: str):
    def get(input):
        if not getattr(input, "is_sparse", False):
            raise RuntimeError(f"{part}_copy() expects a sparse COO tensor, got a dense (strided) tensor: "
                               f"call it on torch.sparse_coo_tensor(...).coalesce()")
        return getattr(input, part)()

    return get


alias_copy = _make("alias_copy", _alias, "``input`` itself")
as_strided_copy = _make("as_strided_copy", as_strided, "``as_strided(input, size, stride, storage_offset)``")
detach_copy = _make("detach_copy", _detach, "``input.detach()``")
diagonal_copy = _make("diagonal_copy", diagonal, "``diagonal(input, offset, dim1, dim2)``")
expand_copy = _make("expand_copy", _expand, "``input.expand(size)``")
permute_copy = _make("permute_copy", permute, "``permute(input, dims)``")
select_copy = _make("select_copy", select, "``select(input, dim, index)``")
slice_copy = _make("slice_copy", _slice, "``input[..., start:end:step]`` along ``dim``")
squeeze_copy = _make("squeeze_copy", squeeze, "``squeeze(input, dim)``")
t_copy = _make("t_copy", t, "``t(input)``")
transpose_copy = _make("transpose_copy", transpose, "``transpose(input, dim0, dim1)``")
unfold_copy = _make("unfold_copy", unfold, "``input.unfold(dimension, size, step)``")
unsqueeze_copy = _make("unsqueeze_copy", unsqueeze, "``unsqueeze(input, dim)``")
view_copy = _make("view_copy", _view, "``input.view(size)`` (or ``input.view(dtype)``)")
view_as_real_copy = _make("view_as_real_copy", view_as_real, "``view_as_real(input)``")
view_as_complex_copy = _make("view_as_complex_copy", view_as_complex, "``view_as_complex(input)``")
indices_copy = _make("indices_copy", _sparse_part("indices"), "a sparse COO tensor's ``indices()``")
values_copy = _make("values_copy", _sparse_part("values"), "a sparse COO tensor's ``values()``")


@register("split_copy")
def split_copy(input: Tensor, split_size, dim: int = 0, *, out=None):
    """``torch.split_copy``: ``split(input, split_size, dim)`` as new tensors."""
    return _copies(split(input, split_size, dim), out, "split_copy")


@register("split_with_sizes_copy")
def split_with_sizes_copy(input: Tensor, split_sizes, dim: int = 0, *, out=None):
    """``torch.split_with_sizes_copy``: ``split_with_sizes(input, split_sizes, dim)`` as new tensors."""
    return _copies(split_with_sizes(input, split_sizes, dim), out, "split_with_sizes_copy")


@register("unbind_copy")
def unbind_copy(input: Tensor, dim: int = 0, *, out=None):
    """``torch.unbind_copy``: ``unbind(input, dim)`` as new tensors."""
    return _copies(unbind(input, dim), out, "unbind_copy")
