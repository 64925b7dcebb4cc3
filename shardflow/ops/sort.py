"""Sorting and selection: sort, argsort, topk, kthvalue, median, multinomial.

* ``sort`` with ``stable=True``: ascending uses NumPy's stable argsort; descending sorts the
  reversed slice stably and reverses the result back, so equal elements keep their original
  order and NaN comes first (PyTorch treats NaN as the largest value). ``stable=False`` (the
  default) is the same answer except where torch's CPU ``std::sort`` leaves equal elements
  in another order: a CPU slice longer than 16 with equal elements is reordered as that
  algorithm does (``_std_sort.py``, replayed in Python; slices up to 65536 elements, at most
  262144 replayed per call, beyond which equal elements keep their original order). On a
  GPU it is always stable (torch's CUDA sort has orders of its own).
  bfloat16 is ordered by its (exact) float32 image (``_util.orderable``): ml_dtypes'
  comparisons left NaN where it was and mis-sorted the values around it.
* ``topk`` selects with ``argpartition`` (O(n)) and sorts only the ``k`` winners; the
  result is always sorted, which is a valid answer for ``sorted=False`` too. With the kernels
  on, float32/float64 take a one-pass selection (``kernels/topk.py``, ~10x faster) whenever
  its answer is unique (no ties, no NaN): the same indices as argpartition's path.
* ``kthvalue`` / ``median(dim)`` select with ``argpartition``; ``median`` is the lower
  median (element ``(n - 1) // 2`` of the sorted slice), as in PyTorch.
* Gradients of ``(values, indices)`` ops scatter the values' gradient back to the selected
  indices; ``median()`` without a dim splits the gradient evenly among ties.
* ``multinomial`` is torch's CPU algorithm on torch's stream (``backend/random_stream.py``),
  so the same seed samples the same indices: with replacement (more than one sample) a
  53-bit uniform per sample searched in the row's normalised running sum; otherwise the
  exponential race (the ``num_samples`` largest of ``w_i / E_i``, ``E_i ~ Exp(1)``), exact
  sequential sampling without replacement.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import CPU, device_of, to_device
from ..backend import random as _random
from ..backend import random_stream as _stream
from ..kernels import topk as _topk
from . import _std_sort
from ._grad_graph import keep_where, linear_adjoint
from ._util import as_array, orderable, refuse_complex, refuse_complex_runtime, wrap_dim
from .reduce import _scatter_grad, return_types

_SORT_COMPLEX = " Sort does not support complex dtypes on CPU"  # torch's words, its space too

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "multinomial"]


def _narrow(a, dim: int, start: int, stop: int):
    """``a[..., start:stop, ...]`` along ``dim`` (a view)."""
    return a[(slice(None),) * dim + (slice(start, stop),)]


def _argsort(a, dim: int, descending: bool, stable: bool = True):
    """Argsort along ``dim``; stable (descending keeps ties in their original order), or with
    ``stable=False`` torch's CPU order for equal elements (module docstring)."""
    a = orderable(a)  # bfloat16 / float8 (ml_dtypes): NumPy's sort of them misplaces NaN
    if not descending:
        idx = a.argsort(axis=dim, kind="stable")
    else:
        n = a.shape[dim]
        rev = np.flip(a, dim).argsort(axis=dim, kind="stable")
        idx = (n - 1) - np.flip(rev, dim)
    if not stable and a.shape[dim] > _std_sort.THRESHOLD and isinstance(a, np.ndarray):
        idx = _unstable_ties(a, idx, dim)
    return idx


_REPLAY_SLICE, _REPLAY_TOTAL = 1 << 16, 1 << 18  # the replay is Python: ~4 us an element


def _unstable_ties(a, idx, dim: int):
    """``idx`` (a stable order) with the slices that have equal elements reordered as torch's
    ``std::sort`` leaves them (``_std_sort.py``)."""
    n = a.shape[dim]
    if n > _REPLAY_SLICE or a.size > _REPLAY_TOTAL or a.dtype.kind == "c":
        return idx
    order = np.moveaxis(idx, dim, -1).reshape(-1, n)
    ordered = np.take_along_axis(np.moveaxis(a, dim, -1).reshape(-1, n), order, axis=-1)
    same = ordered[:, 1:] == ordered[:, :-1]
    if a.dtype.kind not in "biu":  # floats, bfloat16 (ml_dtypes) included: torch's NaNs compare equal
        nan = ordered != ordered
        same |= nan[:, 1:] & nan[:, :-1]
    rows = np.flatnonzero(same.any(axis=1))
    if rows.size == 0:
        return idx
    order = order.copy()
    for r in rows.tolist():
        rank = np.empty(n, np.int64)  # each element's place among the distinct values
        rank[order[r]] = np.concatenate([[0], np.cumsum(~same[r])])
        order[r] = np.asarray(_std_sort.std_sort_order(rank.tolist()), np.int64)
    return np.moveaxis(order.reshape(np.moveaxis(idx, dim, -1).shape), -1, dim)


class _Select(Function):
    """Values at ``idx`` (precomputed, keepdim layout) along ``dim``; grad scatters back."""

    save_inputs = ()

    def forward(self, a, idx, dim, keepdim):
        self.shape, self.idx, self.dim, self.keepdim = a.shape, idx, dim, keepdim
        if a.ndim == 0:
            return a.copy(), np.zeros_like(a, dtype=np.int64)
        vals = np.take_along_axis(a, idx, axis=dim)
        idx = idx.astype(np.int64, copy=False)
        if not keepdim:
            vals, idx = vals.squeeze(dim), idx.squeeze(dim)
        return vals, idx

    def backward(self, g, _g_indices=None):
        return _scatter_grad(g, self.idx, self.shape, self.dim, self.keepdim)

    def backward_graph(self, g, _g_indices=None):
        return linear_adjoint(self, g)  # linear in g with the indices fixed (_grad_graph.py)

    def linear_forward(self, h):
        """``h`` (the input's shape) read at the saved indices: the adjoint of ``backward``."""
        if h.ndim == 0:
            return h.copy()
        vals = np.take_along_axis(h, self.idx, axis=self.dim)
        return vals if self.keepdim else vals.squeeze(self.dim)


_SELECTORS: dict[str, type] = {}


def _selector(op: str) -> type:
    """``_Select`` under torch's node name for ``op`` (``x.sort(1)[0].grad_fn`` prints as
    ``SortBackward0``, ``x.median(1)`` as ``MedianBackward1``; node_names.py): a subclass per
    op, since a node's attributes are freed by backward and its name must outlive them."""
    cls = _SELECTORS.get(op)
    if cls is None:
        number = 1 if op in ("Median", "Nanmedian") else 0  # torch's dim overloads
        cls = _SELECTORS[op] = type(f"_{op}Select", (_Select,), {
            "torch_name": f"{op}Backward{number}", "__doc__": _Select.__doc__})
    return cls


def _dim_of(input: Tensor, dim) -> int:
    return wrap_dim(int(dim), input.array.ndim)


@register("sort")
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """Sort along ``dim``; returns ``(values, indices)``; equal elements in torch's CPU order
    (stable with ``stable=True``; see module doc)."""
    refuse_complex_runtime(input, _SORT_COMPLEX)
    d = _dim_of(input, dim)
    a = input.array
    idx = np.zeros_like(a, dtype=np.int64) if a.ndim == 0 else _argsort(a, d, descending, stable)
    vals, ind = _selector("Sort").apply(input, idx, dim=d, keepdim=True)
    return return_types.sort(vals, ind)


@register("argsort")
def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """Indices that sort ``input`` along ``dim`` (int64; equal elements as ``sort``'s)."""
    refuse_complex_runtime(input, _SORT_COMPLEX)
    a = input.array
    if a.ndim == 0:
        return _wrap(np.zeros_like(a, dtype=np.int64))
    return _wrap(_argsort(a, _dim_of(input, dim), descending, stable).astype(np.int64, copy=False))


@register("msort")
def msort(input: Tensor) -> Tensor:
    """Sort along the first dim (values only)."""
    return sort(input, 0).values


@register("topk")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (or smallest) elements along ``dim`` as ``(values, indices)``."""
    refuse_complex_runtime(input, " topk does not support complex dtypes on CPU")
    a = input.array
    d = _dim_of(input, dim)
    n = a.shape[d] if a.ndim else 1
    k = int(k)
    if not 0 <= k <= n:
        raise RuntimeError(
            f"selected index k out of range: topk(k={k}) along dim {dim} of size {n} "
            f"(input shape {tuple(a.shape)}); use 0 <= k <= {n}"
        )
    if a.ndim == 0:
        idx = np.zeros_like(a, dtype=np.int64)
    elif k == 0:
        shape = list(a.shape)
        shape[d] = 0
        idx = np.zeros_like(a, dtype=np.int64, shape=shape)
    elif 4 * k >= n:  # selecting most of the slice: a full sort is as cheap
        idx = _narrow(_argsort(a, d, largest), d, 0, k)
    else:
        idx = _topk_kernel(a, k, d, largest)
        if idx is None:
            part = np.argpartition(orderable(a), n - k if largest else k - 1, axis=d)
            part = _narrow(part, d, n - k, n) if largest else _narrow(part, d, 0, k)
            order = _argsort(np.take_along_axis(a, part, axis=d), d, largest)
            idx = np.take_along_axis(part, order, axis=d)
    vals, ind = _selector("Topk").apply(input, idx, dim=d, keepdim=True)
    return return_types.topk(vals, ind)


def _topk_kernel(a, k: int, dim: int, largest: bool):
    """The indices (keepdim layout) from the one-pass kernel (``kernels/topk.py``), or None
    when the kernels are off, the dtype is not float32/float64, or some row has ties or NaN
    (the argpartition path then decides, as before)."""
    if type(a) is not np.ndarray or a.dtype not in (np.float32, np.float64) or not kernels.enabled():
        return None
    x = np.ascontiguousarray(np.moveaxis(a, dim, -1))
    idx, ok = _topk.topk_last(x.reshape(-1, x.shape[-1]), k, largest)
    if not ok:
        return None
    return np.moveaxis(idx.reshape(x.shape[:-1] + (k,)), -1, dim)


def _kth_index(a, k0: int, dim: int):
    """Index (keepdim layout) of the element of rank ``k0`` (0-based) along ``dim``."""
    part = np.argpartition(orderable(a), k0, axis=dim)
    return _narrow(part, dim, k0, k0 + 1)


@register("kthvalue")
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest element (1-based) along ``dim`` as ``(values, indices)``."""
    refuse_complex(input, kernel="kthvalue_cpu")
    a = input.array
    d = _dim_of(input, dim)
    n = a.shape[d] if a.ndim else 1
    if not 1 <= int(k) <= n:
        raise RuntimeError(
            f"kthvalue(): selected number k={k} out of range for dim {dim} of size {n}; "
            f"use 1 <= k <= {n}"
        )
    idx = np.zeros_like(a, dtype=np.int64) if a.ndim == 0 else _kth_index(a, int(k) - 1, d)
    vals, ind = _selector("Kthvalue").apply(input, idx, dim=d, keepdim=keepdim)
    return return_types.kthvalue(vals, ind)


class _MedianAll(Function):
    """Lower median of all elements; the gradient is split evenly among tied elements."""

    save_inputs = (0,)

    def forward(self, a):
        if a.size == 0:
            raise RuntimeError("median() of an empty tensor is undefined; give a non-empty input")
        flat = a.reshape(-1)
        first_nan = _first_nan(flat, 0)
        if first_nan is not None and first_nan[1].item():
            # PyTorch: a NaN anywhere makes the median NaN, its gradient split among the NaNs
            at = first_nan[0].item()
            out = flat[at : at + 1].reshape(())
            self.mask = np.isnan(a)
        else:
            m = (flat.size - 1) // 2
            out = np.partition(flat, m)[m : m + 1].reshape(())  # 0-d array
            self.mask = None
        self.a, self.out = a, out
        return out

    def _tied(self):
        return self.a == self.out if self.mask is None else self.mask

    def backward(self, g):
        mask = self._tied()
        return as_array(np.where(mask, g / mask.sum(), 0).astype(g.dtype, copy=False))

    def backward_graph(self, g):
        mask = self._tied()  # the tied positions: piecewise constant
        return keep_where(g.expand(*self.a.shape) / int(mask.sum()), mask)


def _first_nan(a, dim: int):
    """(index of the first NaN along ``dim``, whether there is one), keepdim layout; None for
    dtypes without NaN."""
    if a.dtype.kind in "biu":
        return None
    nan = np.isnan(a)
    return np.argmax(nan, axis=dim, keepdims=True), np.any(nan, axis=dim, keepdims=True)


@register("median")
def median(input: Tensor, dim=None, keepdim: bool = False):
    """``median(x)`` -> lower median of all elements; ``median(x, dim)`` -> ``(values, indices)``."""
    refuse_complex(input, kernel="median_cpu" if dim is None else "median_out")
    if dim is None:
        return _MedianAll.apply(input)
    a = input.array
    d = _dim_of(input, dim)
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"median(): dim {dim} of input shape {tuple(a.shape)} is empty")
    idx = np.zeros_like(a, dtype=np.int64) if a.ndim == 0 else _kth_index(a, (a.shape[d] - 1) // 2, d)
    first_nan = None if a.ndim == 0 else _first_nan(a, d)
    if first_nan is not None:  # PyTorch: a row holding NaN has median NaN, at its first NaN
        idx = np.where(first_nan[1], first_nan[0], idx)
    vals, ind = _selector("Median").apply(input, idx, dim=d, keepdim=keepdim)
    return return_types.median(vals, ind)


@register("multinomial")
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    """Sample category indices from the rows of ``input`` (non-negative weights, 1-D or 2-D).

    Returns int64 of shape ``(num_samples,)`` or ``(rows, num_samples)``.
    """
    w = input.array
    dev = device_of(w)
    if dev.type != "cpu":  # sampled on the host: the draw is tiny next to the model
        w = to_device(w, CPU)
    if w.ndim not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got {w.ndim}-D input of shape {tuple(w.shape)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial(): expected a floating point input, got {input.dtype}; call .float() first")
    num_samples = int(num_samples)
    w2 = np.asarray(w, dtype=np.float64).reshape(-1, w.shape[-1])  # (R, C)
    rows, cats = w2.shape
    if num_samples <= 0:
        raise RuntimeError(f"multinomial(): cannot sample n_sample <= 0 samples (got {num_samples})")
    if not replacement and num_samples > cats:
        raise RuntimeError(
            f"cannot sample n_sample > prob_dist.size(-1) samples without replacement "
            f"({num_samples} > {cats}); pass replacement=True or ask for fewer samples"
        )
    if not np.all(np.isfinite(w2)) or np.any(w2 < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = w2.sum(axis=1, keepdims=True)  # (R, 1)
    if np.any(total <= 0):
        raise RuntimeError(
            "invalid multinomial distribution (sum of probabilities <= 0): every row needs a "
            "positive weight"
        )
    dt = w.dtype if w.dtype in (np.float32, np.float64) else np.float32
    idx = _stream.multinomial(_random.get(generator), w2.astype(dt), total, num_samples, replacement)
    idx = idx.astype(np.int64, copy=False)
    idx = idx[0] if w.ndim == 1 else idx
    return _wrap(idx if dev.type == "cpu" else to_device(idx, dev))
