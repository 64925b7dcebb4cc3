"""Matrix decompositions with PyTorch's names and gradients: ``linalg.qr`` (``torch.qr``),
``linalg.eigh`` / ``eigvalsh``, ``linalg.svd`` / ``svdvals`` (``torch.svd`` with its
``some`` flag and ``V``, not ``Vh``). Real float32 / float64 matrices with any leading batch
dims (``shardflow.linalg`` re-exports the ``linalg_*`` ops under torch's short names).

Forward: the backend's batched LAPACK (NumPy) or cuSOLVER (CuPy) routine — ``qr``
(Householder ``geqrf``), ``eigh`` (``syevd``, reading the ``UPLO`` triangle), ``svd``
(``gesdd``). Signs of the vectors are the routine's, as in torch (a gauge: a column of
``Q``, an eigenvector or a singular pair may flip sign between libraries; gauge-invariant
functions such as ``U diag(S) Vh`` or ``V diag(L) V^T`` agree).

Backward (the gradients torch's ``FunctionsManual.cpp`` computes, checked against torch in
the op spec table; ``^T`` over the last two dims):

* ``Q, R = qr(A)``, ``m >= n`` (reduced), in the Walter-Lehmann form TensorFlow also uses
  (algebraically torch's): ``M = Q^T gQ - gQ^T Q + R gR^T - gR R^T``;
  ``gA = Q (gR + tril(M) R^-T) + (gQ - Q Q^T gQ) R^-T``. ``m < n``: with ``A = [X | Y]``,
  ``R = [U | V]``: ``gX`` is the square case at ``(Q, U)`` with ``gQ + Y gV^T``, ``gY = Q gV``.
  ``mode='complete'`` with ``m > n`` and ``mode='r'`` are not differentiable (torch raises
  too: Q's last columns are not unique / Q was not computed).
* ``L, V = eigh(A)``: ``gA = V (diag(gL) + skew(V^T gV) / E) V^T`` with
  ``skew(X) = (X - X^T) / 2`` and ``E_ij = L_j - L_i`` (distinct eigenvalues). The gradient
  is symmetric, as torch's (the input is taken as the symmetric matrix it stands for).
* ``U, S, Vh = svd(A)`` (``k = min(m, n)``): ``J = (skew(U^T gU) S_row + S_col skew(V^T gV)) / E``
  with ``skew(X) = X - X^T``, ``E_ij = S_j^2 - S_i^2``, plus ``diag(gS)``; then
  ``gA = U J Vh`` and, for a tall (wide) ``A``, the part of ``gU`` (``gV``) outside the span
  of ``U`` (``V``): ``(I - U U^T) gU S^-1 Vh``. ``full_matrices=True`` differentiates through
  the first ``k`` columns of ``U`` / rows of ``Vh`` (torch's narrowing). Distinct singular
  values are assumed, as by torch.

Higher-order gradients: each ``backward_graph`` is the formula above written with
differentiable ops (matmul, ``linalg_solve_triangular``, ``tril``, ``diag_embed``) on the
factors as this node's outputs (``saved_output``), so any order follows.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module, linalg_errors_raised
from ._grad_graph import const, keep_where, op
from ._util import as_tensor_arg
from .cholesky import LinAlgError, _tri_solve
from .reduce import return_types

__all__ = ["linalg_qr", "qr", "linalg_eigh", "linalg_eigvalsh", "linalg_svd", "linalg_svdvals", "svd"]


def _mT(a):
    return a.swapaxes(-1, -2)


def _tmT(t: Tensor) -> Tensor:
    return t.transpose(-1, -2)


def check_float_matrix(t: Tensor, op: str, square: bool = False) -> None:
    """Raise torch's error unless ``t`` is a (batch of) float32/float64 matrices."""
    if t.ndim < 2:
        raise RuntimeError(
            f"{op}: The input tensor A must have at least 2 dimensions, got shape {tuple(t.shape)}; "
            "a vector v is the matrix v.unsqueeze(-1)"
        )
    if square and t.shape[-1] != t.shape[-2]:
        raise RuntimeError(
            f"{op}: A must be batches of square matrices, but they are {t.shape[-2]} by "
            f"{t.shape[-1]} matrices (shape {tuple(t.shape)})"
        )
    if t.array.dtype.kind == "c":
        raise RuntimeError(
            f"{op}: complex matrices ({t.dtype}) are not supported by shardflow yet (real float32 "
            "and float64 only); decompose a real matrix"
        )
    if t.array.dtype.kind != "f" or t.array.dtype.itemsize < 4:
        raise RuntimeError(
            f"{op}: not implemented for {t.dtype} (float32 and float64 only: torch's CPU build "
            "has no half-precision decompositions); convert with .float() or .double() first"
        )


def _lapack(call, op: str):
    try:
        with linalg_errors_raised():
            return call()
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"{op}: the algorithm failed to converge ({e}); check the input for "
                          "NaN/inf or a badly scaled matrix") from None


# ----------------------------------------------------------------------------- QR
def _qr_grad_tall(xp, q, r, gq, gr):
    """``gA`` for ``A = QR`` with ``m >= n`` (reduced Q: (m, n), R: (n, n))."""
    qdq = _mT(q) @ gq
    rdr = r @ _mT(gr)
    m = xp.tril(qdq - _mT(qdq) + rdr - _mT(rdr))
    # X R^-T = solve of X R^T = B: R^T is lower triangular, on the right
    grad_a = q @ (gr + _tri_solve(xp, _mT(r), m, upper=False, left=False, unit=False))
    grad_b = _tri_solve(xp, _mT(r), gq - q @ qdq, upper=False, left=False, unit=False)
    return grad_a + grad_b


def _qr_grad_tall_graph(q, r, gq, gr):
    """``_qr_grad_tall`` with differentiable Tensor ops (``backward_graph``)."""
    solve = op("linalg_solve_triangular")
    qdq = _tmT(q) @ gq
    rdr = r @ _tmT(gr)
    m = op("tril")(qdq - _tmT(qdq) + rdr - _tmT(rdr))
    grad_a = q @ (gr + solve(_tmT(r), m, upper=False, left=False))
    return grad_a + solve(_tmT(r), gq - q @ qdq, upper=False, left=False)


class QR(Function):
    save_inputs = (0,)
    save_output = True

    def forward(self, a, mode="reduced"):
        xp = get_array_module(a)
        self.a, self.mode = a, mode
        if mode == "r":
            r = _lapack(lambda: xp.linalg.qr(a, mode="r"), "linalg.qr")
            self.q, self.r = None, r
            return xp.zeros((0,), dtype=a.dtype), r
        q, r = _lapack(lambda: xp.linalg.qr(a, mode=mode), "linalg.qr")
        self.q, self.r = q, r
        return q, r

    def backward(self, gq, gr):
        xp = get_array_module(gr)
        m, n = self.a.shape[-2:]
        if self.mode == "r":
            raise RuntimeError(
                "linalg.qr_backward: The derivative of linalg.qr depends on Q, which is not "
                "computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                "going to differentiate through linalg.qr."
            )
        if self.mode == "complete" and m > n:
            raise RuntimeError(
                "linalg.qr_backward: The QR decomposition is not differentiable when "
                "mode='complete' and nrows > ncols (the last m - n columns of Q are not unique); "
                "use mode='reduced'"
            )
        q, r = self.q, self.r
        if m >= n:
            ga = _qr_grad_tall(xp, q, r, gq, gr)
        else:
            y = self.a[..., :, m:]
            u, gu, gv = r[..., :, :m], gr[..., :, :m], gr[..., :, m:]
            gx = _qr_grad_tall(xp, q, u, gq + y @ _mT(gv), gu)
            ga = xp.concatenate([gx, q @ gv], axis=-1)
        return ga.astype(self.a.dtype, copy=False)

    def backward_graph(self, gq, gr):
        m, n = self.a.shape[-2:]
        if self.mode == "r" or (self.mode == "complete" and m > n):
            return self.backward(gq.array, gr.array)  # raises torch's error
        # backward's formula with Q and R as this node's outputs (saved_output): any order
        q, r = self.saved_output(0, self.q), self.saved_output(1, self.r)
        if m >= n:
            return _qr_grad_tall_graph(q, r, gq, gr)
        y = self.saved_input(0, self.a)[..., :, m:]
        u, gu, gv = r[..., :, :m], gr[..., :, :m], gr[..., :, m:]
        gx = _qr_grad_tall_graph(q, u, gq + y @ _tmT(gv), gu)
        return op("cat")([gx, q @ gv], -1)


_QR_MODES = ("reduced", "complete", "r")


@register("linalg_qr")
def linalg_qr(A, mode: str = "reduced"):
    """``torch.linalg.qr``: ``(Q, R)`` with ``A = QR``, ``Q`` orthonormal columns, ``R`` upper
    triangular. ``mode``: 'reduced' (Q: (m, k), R: (k, n), k = min(m, n)), 'complete' (Q:
    (m, m), R: (m, n)), 'r' (R only; Q is an empty tensor)."""
    A = as_tensor_arg(A, "A")
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    check_float_matrix(A, "linalg.qr")
    q, r = QR.apply(A, mode=mode)
    return return_types.linalg_qr(q, r)


@register("qr")
def qr(input, some: bool = True):
    """``torch.qr`` (deprecated in torch for ``linalg.qr``): ``some=True`` is mode 'reduced',
    ``some=False`` mode 'complete'."""
    q, r = linalg_qr(input, "reduced" if some else "complete")
    return return_types.qr(q, r)


# ----------------------------------------------------------------------------- eigh
class Eigh(Function):
    save_inputs = ()
    save_output = True

    def forward(self, a, uplo="L"):
        xp = get_array_module(a)
        w, v = _lapack(lambda: xp.linalg.eigh(a, UPLO=uplo), "linalg.eigh")
        self.w, self.v = w, v
        return w, v

    def backward(self, gw, gv):
        xp = get_array_module(gw)
        w, v = self.w, self.v
        vgv = _mT(v) @ gv
        skew = 0.5 * (vgv - _mT(vgv))
        e = w[..., None, :] - w[..., :, None]  # E_ij = L_j - L_i
        n = w.shape[-1]
        eye = xp.eye(n, dtype=bool)
        inner = xp.where(eye, 0, skew / xp.where(eye, 1, e))
        inner = inner + gw[..., :, None] * xp.eye(n, dtype=w.dtype)
        return (v @ inner @ _mT(v)).astype(w.dtype, copy=False)

    def backward_graph(self, gw, gv):
        # backward's formula with L and V as this node's outputs (saved_output): any order
        w, v = self.saved_output(0, self.w), self.saved_output(1, self.v)
        xp = get_array_module(self.w)
        off = ~xp.eye(self.w.shape[-1], dtype=bool)  # (n, n): the off-diagonal positions
        vt = _tmT(v)
        vgv = vt @ gv
        e = w.unsqueeze(-2) - w.unsqueeze(-1)  # E_ij = L_j - L_i
        e = e + const(~off, e)  # 1 on the diagonal: no 0/0 in the graph
        inner = keep_where((vgv - _tmT(vgv)) * 0.5 / e, off) + op("diag_embed")(gw)
        return v @ inner @ vt


def _uplo(UPLO: str, op: str) -> str:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


@register("linalg_eigh")
def linalg_eigh(A, UPLO: str = "L"):
    """``torch.linalg.eigh``: ``(eigenvalues, eigenvectors)`` of symmetric matrices, ascending
    eigenvalues, reading only the ``UPLO`` triangle ('L' lower, 'U' upper)."""
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "linalg.eigh", square=True)
    w, v = Eigh.apply(A, uplo=_uplo(UPLO, "linalg.eigh"))
    return return_types.linalg_eigh(w, v)


@register("linalg_eigvalsh")
def linalg_eigvalsh(A, UPLO: str = "L") -> Tensor:
    """``torch.linalg.eigvalsh``: the ascending eigenvalues of symmetric matrices (the
    gradient is ``V diag(g) V^T``, eigh's with no eigenvector term)."""
    return linalg_eigh(A, UPLO).eigenvalues


# ----------------------------------------------------------------------------- SVD
def _svd_grad(xp, u, s, vh, gu, gs, gvh):
    """``gA`` for the reduced SVD ``A = U diag(S) Vh`` (torch's ``svd_backward``, real)."""
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    v, gv = _mT(vh), _mT(gvh)
    ugu = _mT(u) @ gu
    ugu = ugu - _mT(ugu)
    vgv = _mT(v) @ gv
    vgv = vgv - _mT(vgv)
    s2 = s * s
    eye = xp.eye(k, dtype=bool)
    e = xp.where(eye, 1, s2[..., None, :] - s2[..., :, None])  # E_ij = S_j^2 - S_i^2
    j = xp.where(eye, 0, (ugu * s[..., None, :] + s[..., :, None] * vgv) / e)
    j = j + gs[..., :, None] * xp.eye(k, dtype=s.dtype)
    if m > n:
        gu_sinv = gu / s[..., None, :]
        ga = (u @ j + gu_sinv - u @ (_mT(u) @ gu_sinv)) @ vh
    elif m < n:
        gv_sinv = gv / s[..., None, :]
        ga = u @ (j @ vh + _mT(gv_sinv) - (_mT(gv_sinv) @ v) @ vh)
    else:
        ga = u @ j @ vh
    return ga


def _svd_grad_graph(u, s, vh, gu, gs, gvh):
    """``_svd_grad`` with differentiable Tensor ops (``backward_graph``)."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    v, gv = _tmT(vh), _tmT(gvh)
    ugu = _tmT(u) @ gu
    ugu = ugu - _tmT(ugu)
    vgv = _tmT(v) @ gv
    vgv = vgv - _tmT(vgv)
    s2 = s * s
    off = ~get_array_module(s.array).eye(k, dtype=bool)  # (k, k): the off-diagonal positions
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1)  # E_ij = S_j^2 - S_i^2
    e = e + const(~off, e)  # 1 on the diagonal: no 0/0 in the graph
    j = keep_where((ugu * s.unsqueeze(-2) + s.unsqueeze(-1) * vgv) / e, off) + op("diag_embed")(gs)
    if m > n:
        gu_sinv = gu / s.unsqueeze(-2)
        return (u @ j + gu_sinv - u @ (_tmT(u) @ gu_sinv)) @ vh
    if m < n:
        gv_sinv = gv / s.unsqueeze(-2)
        return u @ (j @ vh + _tmT(gv_sinv) - (_tmT(gv_sinv) @ v) @ vh)
    return u @ j @ vh


class SVD(Function):
    save_inputs = ()
    save_output = True

    def forward(self, a, full_matrices=True):
        xp = get_array_module(a)
        u, s, vh = _lapack(lambda: xp.linalg.svd(a, full_matrices=full_matrices), "linalg.svd")
        k = s.shape[-1]
        self.u, self.s, self.vh = u[..., :, :k], s, vh[..., :k, :]
        self.dtype = a.dtype
        s = s.astype(a.dtype, copy=False)
        self.outputs = (u, s, vh)  # the full factors, for saved_output (no copy: views above)
        return u, s, vh

    def backward(self, gu, gs, gvh):
        xp = get_array_module(gs)
        k = self.s.shape[-1]
        ga = _svd_grad(xp, self.u, self.s, self.vh, gu[..., :, :k], gs, gvh[..., :k, :])
        return ga.astype(self.dtype, copy=False)

    def backward_graph(self, gu, gs, gvh):
        # backward's formula with U, S, Vh as this node's outputs (saved_output): any order
        u, s, vh = (self.saved_output(i, a) for i, a in enumerate(self.outputs))
        k = self.s.shape[-1]
        return _svd_grad_graph(u[..., :, :k], s, vh[..., :k, :], gu[..., :, :k], gs, gvh[..., :k, :])


@register("linalg_svd")
def linalg_svd(A, full_matrices: bool = True, *, driver=None):
    """``torch.linalg.svd``: ``(U, S, Vh)`` with ``A = U diag(S) Vh``, ``S`` descending.
    ``full_matrices=False`` gives the reduced factors (U: (m, k), Vh: (k, n)); ``driver`` (a
    cuSOLVER choice in torch) is accepted and ignored."""
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "linalg.svd")
    u, s, vh = SVD.apply(A, full_matrices=bool(full_matrices))
    return return_types.linalg_svd(u, s, vh)


@register("linalg_svdvals")
def linalg_svdvals(A, *, driver=None) -> Tensor:
    """``torch.linalg.svdvals``: the singular values, descending (gradient ``U diag(g) Vh``)."""
    return linalg_svd(A, full_matrices=False).S


@register("svd")
def svd(input, some: bool = True, compute_uv: bool = True):
    """``torch.svd`` (deprecated in torch for ``linalg.svd``): ``(U, S, V)`` with
    ``A = U diag(S) V^T`` — ``V``, not ``Vh``; ``some=True`` gives the reduced factors.
    ``compute_uv=False``: ``U`` and ``V`` are zero matrices of shape (m, m) and (n, n), as
    torch's."""
    from .creation import zeros

    input = as_tensor_arg(input)
    if not compute_uv:
        check_float_matrix(input, "svd")
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        s = linalg_svdvals(input)
        return return_types.svd(zeros(batch + (m, m), dtype=input.dtype, device=input.device), s,
                                zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    u, s, vh = linalg_svd(input, full_matrices=not some)
    return return_types.svd(u, s, vh.mT)
