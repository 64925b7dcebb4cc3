"""Matrix products: matmul, mm, bmm, mv, dot, outer, addmm, baddbmm, einsum, linear.

``matmul`` follows ``torch.matmul`` exactly: 1-D x 1-D is a dot product (0-d result);
a 1-D first operand is treated as a row vector and a 1-D second operand as a column
vector, the added dim being removed from the result; otherwise the last two dims are
matrices and the leading (batch) dims broadcast.

Algorithms (the hot path of every model):

* 2-D x 2-D: one BLAS GEMM (``np.matmul``); backward ``g @ b.T`` and ``a.T @ g`` — BLAS
  takes the transposed operands through its trans flags, nothing is copied.
* N-D x 2-D (activations times a weight): the leading dims are folded into the rows,
  ``(B*T, K) @ (K, N)``, so forward is one GEMM and the weight gradient ``x2.T @ g2`` is one
  GEMM that also sums over the batch.
* ``linear(x, W, b)`` = ``x2 @ W.T (+ b)`` the same way; the bias gradient is a column sum
  of ``g2``.
* General batched case: ``np.matmul`` with broadcasting; the gradient of a broadcast
  operand is summed back over the broadcast batch dims (``unbroadcast``).
* ``einsum``: the equation is made explicit (ellipsis expanded to letters, implicit output
  = ellipsis dims then the letters used once, sorted). Forward is ``np.einsum(...,
  optimize=True)``. The gradient of operand ``i`` is another einsum of the output gradient
  with the other operands, producing operand ``i``'s letters; letters found only in
  operand ``i`` are broadcast back, size-1 (broadcast) dims are summed, and a repeated
  letter (a diagonal, ``'ii->i'``) is written through a writeable diagonal view.
  bfloat16 operands are contracted in float32 and rounded once (``_einsum``).
* ``linear``: float16/bfloat16 ``x @ W.T + b`` adds the bias to the float32 product and
  rounds once, and the bias gradient is a float32-accumulated sum rounded once, as
  PyTorch's addmm and its CPU sum (rounding twice, or summing in the 2-byte dtype, made
  bfloat16-autocast training drift from PyTorch's by more than its own rounding).

Both operands must have the same dtype (PyTorch raises too). Shape mismatches raise
RuntimeError naming both shapes.
"""

from __future__ import annotations

import math
import string

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import OPS, register
from ..autograd.function import ViewNode
from ..autograd.higher_order import first_order_only
from ..backend import as_dtype, dtypes, get_array_module
from ..backend.fp_errors import enter_quiet, exit_quiet
from ..backend.layout import layout as _layout_cls
from . import _grad_graph as _gg
from ._util import as_array, as_dtype_of, as_tensor_arg, promote, unbroadcast

__all__ = [
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "baddbmm",
    "einsum", "linear",
]


def _fmt(shape) -> str:
    return "x".join(str(s) for s in shape)


def _shape_error(sa, sb) -> RuntimeError:
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({_fmt(sa)} and {_fmt(sb)}): the last dim "
        "of the first operand must equal the first (matrix) dim of the second; transpose or "
        "reshape one of them"
    )


def _same_dtype(a: Tensor, b: Tensor) -> None:
    if a.array.dtype != b.array.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}; cast "
            "one operand with .to(other.dtype)"
        )


def _has_sparse(a, b) -> bool:
    # COO (is_sparse) or a compressed layout (CSR/CSC: ops/sparse_compressed.py), which
    # torch reports as is_sparse False
    return any(getattr(x, "is_sparse", False) or isinstance(getattr(x, "_layout", None), _layout_cls)
               for x in (a, b))


def _tensors(a, b):
    a = as_tensor_arg(a, "input")
    b = as_tensor_arg(b, "other")
    _same_dtype(a, b)
    return a, b


def _cj(a):
    """``a`` conjugated when complex: the gradients of a product take ``conj(other)``
    (PyTorch's conjugate-Wirtinger convention); real arrays pass through untouched."""
    return a.conjugate() if a.dtype.kind == "c" else a


# --------------------------------------------------------------------------- matmul core
class MM(Function):
    """2-D x 2-D."""

    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a, self.b = a, b
        return as_dtype_of(a @ b, a, b)

    def backward(self, g):
        ga = as_dtype_of(g @ _cj(self.b).T, self.a) if self.needs_input_grad[0] else None
        gb = as_dtype_of(_cj(self.a).T @ g, self.b) if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g):
        need = self.needs_input_grad
        return (g @ _gg.conj(self.saved_input(1)).T if need[0] else None,
                _gg.conj(self.saved_input(0)).T @ g if need[1] else None)


class FoldedMM(Function):
    """N-D x 2-D: fold the leading dims of ``a`` into rows, one GEMM each way."""

    save_inputs = (0, 1)

    def forward(self, a, b):
        self.ashape = a.shape
        a2 = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])  # (B*T, K): a view when a is contiguous (-1 fails at K=0)
        self.a2, self.b = a2, b
        return as_dtype_of(a2 @ b, a, b).reshape(a.shape[:-1] + (b.shape[-1],))

    def backward(self, g):
        g2 = g.reshape(self.a2.shape[0], g.shape[-1])  # (B*T, N)
        ga = as_dtype_of(g2 @ _cj(self.b).T, self.a2).reshape(self.ashape) if self.needs_input_grad[0] else None
        gb = as_dtype_of(_cj(self.a2).T @ g2, self.b) if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g):
        need = self.needs_input_grad
        g2 = g.reshape(self.a2.shape[0], g.shape[-1])  # (B*T, N)
        ga = (g2 @ _gg.conj(self.saved_input(1)).T).reshape(self.ashape) if need[0] else None
        gb = None
        if need[1]:
            a2 = self.saved_input(0, self.a2.reshape(self.ashape)).reshape(self.a2.shape)
            gb = _gg.conj(a2).T @ g2
        return ga, gb


def _grad_to(prod, like, shape):
    """A batched product's gradient for the operand ``like`` (of ``shape`` before any 1-D
    promotion): summed over broadcast batch dims and in ``like``'s dtype. bfloat16 as
    PyTorch: each batch's GEMM rounded to bfloat16 (NumPy returns float32), then the
    broadcast sum accumulated in float32 and rounded once."""
    if prod.dtype != like.dtype and like.dtype.kind == "V":
        prod = prod.astype(like.dtype)
        if prod.shape != tuple(shape):
            prod = unbroadcast(prod.astype(np.float32), shape).astype(like.dtype)
        return prod.reshape(like.shape)
    return as_dtype_of(unbroadcast(prod, shape).reshape(like.shape), like)


class BatchedMatMul(Function):
    """General ``np.matmul`` (1-D operands, broadcast batch dims)."""

    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a, self.b = a, b
        return as_array(as_dtype_of(a @ b, a, b))

    def backward(self, g):
        a, b = self.a, self.b
        a1 = a[None, :] if a.ndim == 1 else a  # (..., M, K)
        b1 = b[:, None] if b.ndim == 1 else b  # (..., K, N)
        batch = np.broadcast_shapes(a1.shape[:-2], b1.shape[:-2])
        g1 = g.reshape(batch + (a1.shape[-2], b1.shape[-1]))  # (..., M, N)
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = _grad_to(g1 @ np.swapaxes(_cj(b1), -1, -2), a, a1.shape)
        if self.needs_input_grad[1]:
            gb = _grad_to(np.swapaxes(_cj(a1), -1, -2) @ g1, b, b1.shape)
        return ga, gb

    def backward_graph(self, g):
        a, b = _gg.conj(self.saved_input(0)), _gg.conj(self.saved_input(1))
        a1 = a.unsqueeze(0) if a.ndim == 1 else a  # (..., M, K)
        b1 = b.unsqueeze(-1) if b.ndim == 1 else b  # (..., K, N)
        batch = np.broadcast_shapes(tuple(a1.shape[:-2]), tuple(b1.shape[:-2]))
        g1 = g.reshape(batch + (a1.shape[-2], b1.shape[-1]))  # (..., M, N)
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = _gg.sum_to(g1 @ b1.transpose(-1, -2), tuple(a1.shape)).reshape(tuple(a.shape))
        if self.needs_input_grad[1]:
            gb = _gg.sum_to(a1.transpose(-1, -2) @ g1, tuple(b1.shape)).reshape(tuple(b.shape))
        return ga, gb


def _check_matmul(sa, sb):
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D; "
            "use mul (*) for scalars"
        )
    if na == 1 and nb == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have "
                f"the same number of elements, but got {sa[0]} and {sb[0]} elements respectively"
            )
        return
    if nb == 1:
        if sa[-1] != sb[0]:
            if na == 2:
                raise RuntimeError(
                    f"size mismatch, got input ({sa[0]}), mat ({_fmt(sa)}), vec ({sb[0]})"
                )
            raise _shape_error(sa, sb)
        return
    k_b = sb[-2]
    if sa[-1] != k_b:
        if na == 1:
            raise _shape_error((1,) + tuple(sa), sb)
        if nb == 2 and na > 2:
            raise _shape_error((int(np.prod(sa[:-1])), sa[-1]), sb)
        raise _shape_error(sa, sb)
    if na > 2 or nb > 2:
        ba = sa[:-2] if na >= 2 else ()
        bb = sb[:-2]
        try:
            np.broadcast_shapes(tuple(ba), tuple(bb))
        except ValueError:
            from .arithmetic import _broadcast_error

            raise _broadcast_error(tuple(ba), tuple(bb)) from None


@register("matmul")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """``torch.matmul``: see the module docstring for the 1-D / batched rules."""
    if (input.__class__ is not Tensor or other.__class__ is not Tensor) and _has_sparse(input, other):
        return OPS["_sparse_matmul"](input, other)  # a sparse COO operand: ops/sparse_coo.py
    a, b = input, other
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.array.dtype != b.array.dtype:
        a, b = _tensors(a, b)
    sa, sb = a.array.shape, b.array.shape
    if len(sa) == 2 and len(sb) == 2:  # the hot path: one GEMM
        if sa[1] != sb[0]:
            raise _shape_error(sa, sb)
        return MM.apply(a, b)
    _check_matmul(sa, sb)
    if len(sb) == 2 and len(sa) > 2:
        return FoldedMM.apply(a, b)
    return BatchedMatMul.apply(a, b)


def _with_out_dtype(op: str, out_dtype, *operands):
    """The operands of ``op(..., out_dtype=)`` (torch 2.13's CUDA keyword): ``out_dtype`` the
    operands' dtype leaves them; float32 for float16/bfloat16 operands casts them to float32,
    so the product accumulates and returns in float32 as torch's kernels do (torch's CPU
    build raises NotImplementedError for it instead); any other raises torch's RuntimeError."""
    if out_dtype is None:
        return operands
    od = as_dtype(out_dtype)
    ts = [t for t in operands if isinstance(t, Tensor)]
    src = {t.dtype for t in ts}
    if src == {od}:
        return operands
    if od is dtypes.float32 and src <= {dtypes.float16, dtypes.bfloat16} and len(src) == 1:
        return tuple(t.to(od) if isinstance(t, Tensor) else t for t in operands)
    raise RuntimeError(f"{op}(out_dtype={od}): out_dtype must be the same as input dtype or fp32 for "
                       f"fp16/bf16 inputs, got inputs of {sorted(str(d) for d in src)}")


@register("mm")
def mm(input: Tensor, mat2: Tensor, *, out_dtype=None) -> Tensor:
    """Matrix product of two 2-D tensors (no broadcasting); ``out_dtype``: ``_with_out_dtype``."""
    if out_dtype is not None:
        input, mat2 = _with_out_dtype("mm", out_dtype, input, mat2)
    if (input.__class__ is not Tensor or mat2.__class__ is not Tensor) and _has_sparse(input, mat2):
        return OPS["_sparse_matmul"](input, mat2)  # a sparse COO operand: ops/sparse_coo.py
    a, b = _tensors(input, mat2)
    if a.array.ndim != 2:
        raise RuntimeError(f"self must be a matrix, got a {a.array.ndim}-D tensor of shape {tuple(a.shape)}")
    if b.array.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got a {b.array.ndim}-D tensor of shape {tuple(b.shape)}")
    if a.array.shape[1] != b.array.shape[0]:
        raise _shape_error(a.array.shape, b.array.shape)
    return MM.apply(a, b)


@register("bmm")
def bmm(input: Tensor, mat2: Tensor, *, out_dtype=None) -> Tensor:
    """Batched matrix product: ``(B, M, K) @ (B, K, N) -> (B, M, N)`` (no broadcasting)."""
    if out_dtype is not None:
        input, mat2 = _with_out_dtype("bmm", out_dtype, input, mat2)
    a, b = _tensors(input, mat2)
    sa, sb = a.array.shape, b.array.shape
    if len(sa) != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor, got shape {tuple(sa)}")
    if len(sb) != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor, got shape {tuple(sb)}")
    if sb[0] != sa[0] or sb[1] != sa[2]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] "
            f"but got: [{sb[0]}, {sb[1]}] (bmm of shapes {_fmt(sa)} and {_fmt(sb)})."
        )
    return BatchedMatMul.apply(a, b)


@register("mv")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product ``(M, K) @ (K,) -> (M,)``."""
    a, b = _tensors(input, vec)
    sa, sb = a.array.shape, b.array.shape
    if len(sa) != 2 or len(sb) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {len(sa)}, {len(sb)}-D operands")
    if sa[1] != sb[0]:
        raise RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({_fmt(sa)}), vec ({sb[0]})")
    return BatchedMatMul.apply(a, b)


@register("dot")
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-D tensors (0-d result)."""
    a, b = _tensors(input, tensor)
    sa, sb = a.array.shape, b.array.shape
    if len(sa) != 1 or len(sb) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(sa)}D and {len(sb)}D tensors")
    _check_matmul(sa, sb)
    return BatchedMatMul.apply(a, b)


@register("vdot")
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``dot(conj(input), other)``: the first argument conjugated for complex inputs, as torch."""
    if isinstance(input, Tensor) and input.is_complex():
        input = input.conj()
    return dot(input, other)


@register("inner")
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum product over the last dims: ``einsum('...k,...k')`` in torch.inner's layout."""
    a, b = _tensors(input, other)
    if a.array.ndim == 0 or b.array.ndim == 0:
        from .arithmetic import mul

        return mul(a, b)
    if a.array.shape[-1] != b.array.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    la = string.ascii_letters[: a.array.ndim - 1]
    lb = string.ascii_letters[26 : 26 + b.array.ndim - 1]
    return einsum(f"{la}z,{lb}z->{la}{lb}", a, b)


class Outer(Function):
    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a, self.b = a, b
        return a[:, None] * b[None, :]

    def backward(self, g):
        a, b = self.a, self.b
        if a.dtype.kind == "c":  # complex: g @ conj(other) (conjugate Wirtinger, as PyTorch)
            a, b = a.conjugate(), b.conjugate()
        ga = g @ b if self.needs_input_grad[0] else None
        gb = a @ g if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g):
        a, b = _gg.conj(self.saved_input(0)), _gg.conj(self.saved_input(1))
        return (g @ b if self.needs_input_grad[0] else None,
                a @ g if self.needs_input_grad[1] else None)


@register("outer", "ger")
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-D tensors: ``(M,), (N,) -> (M, N)``. Unlike the other
    products, PyTorch promotes mixed dtypes here (``outer(int64, float32)`` is float32)."""
    a, b = promote(as_tensor_arg(input, "input"), as_tensor_arg(vec2, "vec2"))
    for name, t in (("self", a), ("vec2", b)):
        if t.array.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.array.ndim}-D")
    return Outer.apply(a, b)


ger = outer


def _scaled_add(input, prod, beta, alpha):
    from .arithmetic import add, mul

    if alpha != 1:
        prod = mul(prod, alpha)
    if beta == 0:  # PyTorch ignores input entirely (nan/inf in it do not propagate)
        return prod
    return add(mul(input, beta) if beta != 1 else input, prod)


@register("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out_dtype=None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``."""
    if out_dtype is not None:
        input, mat1, mat2 = _with_out_dtype("addmm", out_dtype, input, mat1, mat2)
    return _scaled_add(input, mm(mat1, mat2), beta, alpha)


@register("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out_dtype=None) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    if out_dtype is not None:
        input, batch1, batch2 = _with_out_dtype("baddbmm", out_dtype, input, batch1, batch2)
    return _scaled_add(input, bmm(batch1, batch2), beta, alpha)


# --------------------------------------------------------------------------- linear
def _sum_rows(g2):
    """``g2.sum(axis=0)``, float16/bfloat16 accumulated in float32 and rounded once, as
    PyTorch's CPU sum (NumPy would round every partial sum to the 2-byte dtype)."""
    if g2.dtype.itemsize == 2 and g2.dtype.kind in "fV":
        return g2.astype(np.float32).sum(axis=0).astype(g2.dtype)
    return g2.sum(axis=0)


class Linear(Function):
    """``y = x @ W.T + b`` with the leading dims of ``x`` folded into GEMM rows."""

    save_inputs = (0, 1)

    def forward(self, x, w, b=None):
        xshape = x.shape
        x2 = x if x.ndim == 2 else x.reshape(-1, xshape[-1])  # (R, in)
        if b is not None and x2.dtype == np.float16:  # float16 @ float16 would round here
            y = x2.astype(np.float32) @ w.T.astype(np.float32)
        else:
            y = x2 @ w.T  # (R, out): BLAS reads W transposed in place
        if b is not None:
            # before the cast: a bfloat16/float16 product is float32 here, and PyTorch's
            # addmm adds the bias in its float32 accumulator and rounds once
            y += b
        y = y.astype(x2.dtype) if x2.dtype.itemsize == 2 and y.dtype != x2.dtype else as_dtype_of(y, x, w)
        self.x2, self.w, self.xshape = x2, w, xshape
        self.bshape = None if b is None else b.shape
        return y if x.ndim == 2 else y.reshape(xshape[:-1] + (w.shape[0],))

    def torch_next_functions(self, pairs: tuple) -> tuple:
        """torch's linear is ``addmm(bias, x, weight.t())`` (``mm(x, weight.t())`` without a
        bias): its node lists the bias first and reaches the weight through a ``TBackward0``
        node (the tutorial's ``loss.grad_fn.next_functions[0][0].next_functions[0][0]`` is
        the bias's AccumulateGrad in torch)."""
        x, w = pairs[0], pairs[1]
        if w[0] is not None:
            w = (ViewNode("TBackward0", w), 0)
        if len(pairs) > 2 and pairs[2][0] is not None:
            return (pairs[2], x, w)
        return (x, w)

    def backward(self, g):
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])  # (R, out)
        # (out, in): sums all rows. A bfloat16 GEMM comes back float32 from NumPy: rounded
        # to the operand's dtype, as PyTorch's (its autograd casts every gradient to its
        # input's dtype; the next node then reads the rounded values)
        gw = as_dtype_of(g2.T @ _cj(self.x2), self.w) if self.needs_input_grad[1] else None
        return self._other_grads(g2, gw)

    def backward_weight_later(self, g):
        """``backward(g)`` with the weight's gradient left out and returned as a
        zero-argument callable running the same GEMM (None when not needed):
        ``((gx, None[, gb]), later)``. compile_step's backward runs it on a second thread
        while the input gradient flows on (``jit/overlap.py``); the callable holds its own
        references, so ``release()`` may run before it."""
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])  # (R, out)
        x2 = self.x2
        w = self.w
        later = (lambda: as_dtype_of(g2.T @ _cj(x2), w)) if self.needs_input_grad[1] else None
        return self._other_grads(g2, None), later

    def _other_grads(self, g2, gw):
        need = self.needs_input_grad
        gx = gb = None
        if need[0]:
            gx = as_dtype_of(g2 @ _cj(self.w), self.x2)
            if len(self.xshape) != 2:
                gx = gx.reshape(self.xshape)
        if self.bshape is None:
            return gx, gw
        if need[2]:
            gb = _sum_rows(g2)
            if gb.shape != self.bshape:
                gb = unbroadcast(gb, self.bshape)
        return gx, gw, gb

    def backward_graph(self, g):
        need = self.needs_input_grad
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])  # (R, out)
        gx = gw = gb = None
        if need[0]:
            gx = g2 @ _gg.conj(self.saved_input(1, self.w))
            if len(self.xshape) != 2:
                gx = gx.reshape(self.xshape)
        if need[1]:
            x = self.saved_input(0, self.x2.reshape(self.xshape))
            gw = g2.T @ _gg.conj(x if len(self.xshape) == 2 else x.reshape(self.x2.shape))
        if self.bshape is None:
            return gx, gw
        if need[2]:
            gb = _gg.sum_to(g2.sum(0), self.bshape)
        return gx, gw, gb


@register("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``torch.nn.functional.linear``: ``input @ weight.T + bias``.

    input ``(*, in)``, weight ``(out, in)``, bias ``(out,)`` or None -> ``(*, out)``.
    """
    x, w = input, weight
    if not (isinstance(x, Tensor) and isinstance(w, Tensor)) or x.array.dtype != w.array.dtype:
        x, w = _tensors(x, w)
    if w.array.ndim != 2 or x.array.ndim == 0:
        out = matmul(x, w.T if w.array.ndim == 2 else w)
        return out if bias is None else out + bias
    xs, ws = x.array.shape, w.array.shape
    if xs[-1] != ws[1]:
        rows = int(np.prod(xs[:-1])) if len(xs) > 1 else 1
        raise _shape_error((rows, xs[-1]), (ws[1], ws[0]))
    if bias is None:
        return Linear.apply(x, w)
    if not isinstance(bias, Tensor) or bias.array.dtype != x.array.dtype:
        bias = as_tensor_arg(bias, "bias")
        _same_dtype(x, bias)
    return Linear.apply(x, w, bias)


# --------------------------------------------------------------------------- einsum
def _parse_einsum(equation: str, shapes):
    """Make ``equation`` explicit: (input subscripts, output subscripts, size per letter)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise RuntimeError(
            f"einsum(): {len(ins)} operand subscripts in {equation!r} but {len(shapes)} operands "
            "were given; give one operand per comma-separated term"
        )
    for term in ins + [rhs]:
        bad = [c for c in term.replace("...", "") if c not in string.ascii_letters]
        if bad:
            raise RuntimeError(f"einsum(): invalid subscript {bad[0]!r} in {equation!r}; use letters a-z, A-Z and '...'")
    used = set(eq)
    free = [c for c in string.ascii_letters if c not in used]
    n_ell = []
    for term, shp in zip(ins, shapes):
        named = len(term.replace("...", ""))
        if "..." in term:
            k = len(shp) - named
            if k < 0:
                raise RuntimeError(f"einsum(): operand subscripts {term!r} have more dims than the operand's shape {tuple(shp)}")
            n_ell.append(k)
        else:
            if named != len(shp):
                raise RuntimeError(
                    f"einsum(): the number of subscripts in {term!r} ({named}) does not match the "
                    f"number of dimensions ({len(shp)}) of operand shape {tuple(shp)}"
                )
            n_ell.append(0)
    max_ell = max(n_ell, default=0)
    if max_ell > len(free):
        raise NotImplementedError("einsum(): too many dims for the available subscript letters")
    ell = "".join(free[:max_ell])
    exp_ins = [t.replace("...", ell[max_ell - k :]) for t, k in zip(ins, n_ell)]
    if arrow:
        if "..." in rhs:
            out = rhs.replace("...", ell)
        else:
            out = rhs
        for c in out:
            if not any(c in t for t in exp_ins):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
        if len(set(out)) != len(out):
            raise RuntimeError(f"einsum(): output subscripts of {equation!r} repeat a letter")
    else:
        letters = "".join(t.replace("...", "") for t in ins)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    sizes: dict[str, int] = {}
    for i, (t, shp) in enumerate(zip(exp_ins, shapes)):
        for c, s in zip(t, shp):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = s
            elif s != prev and s != 1:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {s} for operand {i} which does not broadcast "
                    f"with previously seen size {prev}"
                )
    return exp_ins, out, sizes


def _dedupe(s: str) -> str:
    return "".join(dict.fromkeys(s))


def _einsum(eq: str, *ops):
    """``np.einsum(eq, *ops, optimize=True)`` in the operands' dtype. NumPy's einsum has no
    bfloat16 (ml_dtypes) loop and its BLAS path returns float32, so bfloat16 operands are
    contracted in float32 and the result rounded to bfloat16 once (PyTorch's CPU kernels
    accumulate bfloat16 in float32 too). float32/float64 pay one dtype check per operand."""
    low = next((o.dtype for o in ops if o.dtype.kind == "V"), None)
    token = enter_quiet()  # np.einsum is Python: its FP warnings escape the module filter (fp_errors.py)
    try:
        if low is None:
            return np.einsum(eq, *ops, optimize=True)
        wide = [o.astype(np.float32) if o.dtype.kind == "V" else o for o in ops]
        return np.einsum(eq, *wide, optimize=True).astype(low)
    finally:
        exit_quiet(token)


class Einsum(Function):
    save_inputs = None

    def forward(self, *arrays, ins, out):
        self.arrays, self.ins, self.out = arrays, ins, out
        eq = ",".join(ins) + "->" + out
        res = _einsum(eq, *arrays)
        if len(arrays) == 1 and np.may_share_memory(res, arrays[0]):
            res = res.copy()
        elif len(arrays) > 1 and not res.flags.c_contiguous and set("".join(ins)) - set(out):
            # a contraction's result is contiguous in torch (it is a GEMM's output), so programs
            # `.view()` it; NumPy's einsum may hand back a permuted one
            res = res.copy()
        return as_array(res)

    def backward(self, g):
        grads = [self._grad(i, g) if need else None for i, need in enumerate(self.needs_input_grad)]
        return grads[0] if len(grads) == 1 else tuple(grads)

    def _grad(self, i, g):
        s_i = self.ins[i]
        shape_i = self.arrays[i].shape
        uniq = _dedupe(s_i)
        subs = [self.out] + [t for j, t in enumerate(self.ins) if j != i]
        ops = [g] + [_cj(x) for j, x in enumerate(self.arrays) if j != i]
        avail = set("".join(subs))
        keep = "".join(c for c in uniq if c in avail)
        r = _einsum(",".join(subs) + "->" + keep, *ops)
        # lay r out over operand i's unique letters: size-1 axes for letters absent from r
        r = r.reshape([r.shape[keep.index(c)] if c in keep else 1 for c in uniq])
        target = [shape_i[s_i.index(c)] for c in uniq]
        sum_axes = tuple(k for k, (have, want) in enumerate(zip(r.shape, target)) if want == 1 and have != 1)
        if sum_axes:
            r = r.sum(axis=sum_axes, keepdims=True)
        xp = get_array_module(g)  # numpy, or CuPy for device gradients
        r = xp.broadcast_to(r, target)
        if len(uniq) == len(s_i):
            return xp.ascontiguousarray(r).astype(g.dtype, copy=False)
        # repeated letter(s): the gradient lives on a diagonal of operand i
        low = g.dtype.kind == "V"  # no bfloat16 einsum loop, not even for a diagonal view
        full = xp.zeros(shape_i, np.float32 if low else g.dtype)
        # a unary einsum without summation is a writeable view in NumPy and in CuPy
        diag = xp.einsum(f"{s_i}->{uniq}", full)
        if not xp.may_share_memory(diag, full):  # pragma: no cover - both always give a view
            raise NotImplementedError("einsum backward: repeated subscripts need a diagonal view")
        diag[...] = r
        return full.astype(g.dtype) if low else full

    def backward_graph(self, g):
        if any(len(_dedupe(s)) != len(s) for s in self.ins):
            # a repeated subscript (a diagonal) has no differentiable gradient form here
            return first_order_only(self, g)
        xs = [self.saved_input(j, x) for j, x in enumerate(self.arrays)]
        grads = [self._grad_graph(i, g, xs) if need else None
                 for i, need in enumerate(self.needs_input_grad)]
        return grads[0] if len(grads) == 1 else tuple(grads)

    def _grad_graph(self, i, g, xs):
        """``_grad`` with differentiable ops (operand ``i`` has no repeated subscript)."""
        s_i = self.ins[i]
        shape_i = tuple(self.arrays[i].shape)
        subs = [self.out] + [t for j, t in enumerate(self.ins) if j != i]
        ops = [g] + [_gg.conj(x) for j, x in enumerate(xs) if j != i]
        avail = set("".join(subs))
        keep = "".join(c for c in s_i if c in avail)
        r = OPS["einsum"](",".join(subs) + "->" + keep, *ops)
        r = r.reshape([r.shape[keep.index(c)] if c in keep else 1 for c in s_i])
        sum_axes = tuple(k for k, (have, want) in enumerate(zip(r.shape, shape_i))
                         if want == 1 and have != 1)
        if sum_axes:
            r = r.sum(dim=sum_axes, keepdim=True)
        return r.expand(*shape_i) if tuple(r.shape) != shape_i else r


def _sublist_equation(first, rest) -> tuple[str, tuple]:
    """``(equation, operands)`` of einsum's sublist form (``einsum(a, [0, 1], b, [1, 2])``)."""
    args = (first, *rest)
    pairs, out = args[: len(args) // 2 * 2], args[len(args) // 2 * 2:]

    def letters(sub) -> str:
        if not isinstance(sub, list | tuple):
            raise TypeError(f"einsum(): in the sublist form each operand is followed by a list of "
                            f"subscripts (ints 0-51 or ...), got {type(sub).__name__}")
        text = []
        for v in sub:
            if v is Ellipsis:
                text.append("...")
            elif isinstance(v, int) and 0 <= v < 52:
                text.append(chr(ord("a") + v) if v < 26 else chr(ord("A") + v - 26))
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), got {v!r}")
        return "".join(text)

    equation = ",".join(letters(sub) for sub in pairs[1::2])
    if out:
        equation += "->" + letters(out[0])
    return equation, tuple(pairs[0::2])


@register("einsum")
def einsum(equation: str, *operands) -> Tensor:
    """``torch.einsum(equation, *operands)`` (operands may also be given as one list), or the
    sublist form ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])`` (NumPy's: subscripts as ints
    0-51 and ``...``, an optional output sublist last), turned into the equation."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation(equation, operands)
    elif len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    ts = [as_tensor_arg(t, f"operand {k}") for k, t in enumerate(operands)]
    if not ts:
        raise RuntimeError("einsum(): must provide at least one operand")
    d0 = ts[0].array.dtype
    for k, t in enumerate(ts[1:], 1):
        if t.array.dtype != d0:
            raise RuntimeError(
                f"einsum(): expected all operands to have the same dtype, got {ts[0].dtype} for "
                f"operand 0 and {t.dtype} for operand {k}; cast with .to(...)"
            )
    ins, out, _ = _parse_einsum(equation, [t.array.shape for t in ts])
    return Einsum.apply(*ts, ins=ins, out=out)
