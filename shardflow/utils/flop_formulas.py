"""torch's FLOP formulas (``torch.utils.flop_counter``), and which aten op torch records for
each shardflow op call, forward and backward: the pricing half of ``flop_counter.py``.

A rule ``RULES[op name](args, kwargs, out)`` returns ``((key, flops), backward)`` with
``backward`` the list of ``(key, flops)`` torch's backward ops add when the call's node runs
backward, or None when torch counts nothing for the call. Which aten op torch lowers a call
to was read off torch 2.13's counter on CPU (``F.linear`` with a bias on a contiguous input is
one ``addmm``, without one an ``mm``; ``matmul`` folds batch dimensions of the left operand
into an ``mm`` when the right one is a matrix ...); the backward of a product is one product
of the same size per input that requires grad.
"""

from __future__ import annotations

import inspect
from math import prod

from ..autograd.tensor import Tensor
from ..backend import dtypes

__all__ = ["OpKey", "RULES", "mm_flop", "bmm_flop", "conv_flop_count", "sdpa_flop_count",
           "sdpa_backward_flop_count"]


class OpKey:
    """The op a count is kept under: ``str`` is torch's (``"aten.mm"``), and it equals that string."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self.name}')>"

    def __eq__(self, other) -> bool:
        if isinstance(other, OpKey):
            return other.name == self.name
        return isinstance(other, str) and other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


MM, ADDMM, BMM, BADDBMM = OpKey("aten.mm"), OpKey("aten.addmm"), OpKey("aten.bmm"), OpKey("aten.baddbmm")
CONV, CONV_BACKWARD = OpKey("aten.convolution"), OpKey("aten.convolution_backward")
SDPA_EFFICIENT = OpKey("aten._scaled_dot_product_efficient_attention")
SDPA_EFFICIENT_BACKWARD = OpKey("aten._scaled_dot_product_efficient_attention_backward")
SDPA_FLASH = OpKey("aten._scaled_dot_product_flash_attention")
SDPA_FLASH_BACKWARD = OpKey("aten._scaled_dot_product_flash_attention_backward")


# ---------------------------------------------------------------------- torch's formulas
def mm_flop(a_shape, b_shape) -> int:
    """``2 * m * n * k`` (torch counts a multiply-add as two FLOPs)."""
    m, k = a_shape
    return m * b_shape[1] * 2 * k


def bmm_flop(a_shape, b_shape) -> int:
    b, m, k = a_shape
    return b * m * b_shape[2] * 2 * k


def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """Multiplications of a convolution, times two (bias not counted): per point of the output
    (of the input, for a transposed convolution) a filter times the channels."""
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * x_shape[0] * c_out * c_in * 2


def _conv_backward_flop(grad_out_shape, x_shape, w_shape, transposed, x_grad, w_grad) -> int:
    def t(shape):
        return [shape[1], shape[0], *shape[2:]]

    flops = 0
    if x_grad:  # grad_input: a transposed convolution of grad_out with the weight
        flops += conv_flop_count(grad_out_shape, w_shape, x_shape, not transposed)
    if w_grad:  # grad_weight: a convolution of the input with grad_out
        if transposed:
            flops += conv_flop_count(t(grad_out_shape), t(x_shape), t(w_shape), transposed=False)
        else:
            flops += conv_flop_count(t(x_shape), t(grad_out_shape), t(w_shape), transposed=False)
    return flops


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Attention's two batched products (query heads; grouped key/value heads broadcast)."""
    b, h_q, s_q, d_q = query_shape
    s_k, d_v = key_shape[2], value_shape[3]
    return bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k)) + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v))


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """The scores recomputed, then the four products of the gradients (torch's count)."""
    b, h_q, s_q, d_q = query_shape
    s_k, d_v = key_shape[2], value_shape[3]
    bh = b * h_q
    return (bmm_flop((bh, s_q, d_q), (bh, d_q, s_k)) + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
            + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v)) + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
            + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k)))


# ---------------------------------------------------------------------- the rules
def _grad(t) -> bool:
    return isinstance(t, Tensor) and t.requires_grad


def _product(key, flops, backward_key, *operands):
    """A product counted as torch does: ``flops`` forward under ``key``, and the same again
    under ``backward_key`` for each operand that requires grad."""
    return (key, flops), [(backward_key, flops)] * sum(_grad(t) for t in operands)


def _binder(signature_of):
    sig = inspect.signature(signature_of)

    def bind(args, kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    return bind


def _mm(args, kwargs, out):
    a, b = args[0], args[1] if len(args) > 1 else kwargs["mat2"]
    return _product(MM, mm_flop(a.shape, b.shape), MM, a, b)


def _bmm(args, kwargs, out):
    a, b = args[0], args[1] if len(args) > 1 else kwargs["mat2"]
    return _product(BMM, bmm_flop(a.shape, b.shape), BMM, a, b)


_bind_addmm = _binder(lambda input, mat1, mat2, *, beta=1, alpha=1, out_dtype=None: None)
_bind_baddbmm = _binder(lambda input, batch1, batch2, *, beta=1, alpha=1, out_dtype=None: None)


def _addmm(args, kwargs, out):
    a = _bind_addmm(args, kwargs)
    return _product(ADDMM, mm_flop(a["mat1"].shape, a["mat2"].shape), MM, a["mat1"], a["mat2"])


def _baddbmm(args, kwargs, out):
    a = _bind_baddbmm(args, kwargs)
    return _product(BADDBMM, bmm_flop(a["batch1"].shape, a["batch2"].shape), BMM, a["batch1"], a["batch2"])


def _matmul(args, kwargs, out):
    a, b = args[0], args[1] if len(args) > 1 else kwargs["other"]
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or not isinstance(out, Tensor):
        return None
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sb) == 1:
        return None  # a dot or matrix-vector product: torch has no formula for them
    k = sb[-2]
    flops = 2 * prod(out.shape) * k  # rows (batch included) x columns x inner size
    if len(sb) == 2 or prod(sb[:-2]) == 1:
        key = MM  # the left operand's batch dimensions folded into the rows of one mm
    elif len(sa) == 1:
        if _grad(a):
            return None  # torch's broadcast path for a vector that requires grad: no formula
        key = BMM
    elif len(sa) == 2 and _grad(a):
        key = MM  # torch folds the right operand's batch into the columns instead
    else:
        key = BMM
    return _product(key, flops, key, a, b)


def _linear(args, kwargs, out):
    x = args[0]
    w = args[1] if len(args) > 1 else kwargs["weight"]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if not (isinstance(x, Tensor) and isinstance(w, Tensor)) or w.dim() != 2 or x.dim() == 0:
        return None
    flops = 2 * (prod(x.shape[:-1]) if x.dim() > 1 else 1) * w.shape[0] * w.shape[1]
    fused = bias is not None and (x.dim() <= 2 or x.is_contiguous())
    return _product(ADDMM if fused else MM, flops, MM, x, w)


def _conv_rule(nd: int, transposed: bool):
    def rule(args, kwargs, out):
        x = args[0]
        w = args[1] if len(args) > 1 else kwargs["weight"]
        if not (isinstance(x, Tensor) and isinstance(w, Tensor) and isinstance(out, Tensor)):
            return None
        xs, os_ = tuple(x.shape), tuple(out.shape)
        if len(xs) == nd + 1:  # unbatched: torch convolves it as a batch of one
            xs, os_ = (1, *xs), (1, *os_)
        ws = tuple(w.shape)
        back = _conv_backward_flop(os_, xs, ws, transposed, _grad(x), _grad(w))
        return (CONV, conv_flop_count(xs, ws, os_, transposed)), [(CONV_BACKWARD, back)] if back else []

    return rule


_bind_sdpa = _binder(lambda query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                     enable_gqa=False: None)


def _as_4d(shape):
    """(batch, heads, length, dim): leading dimensions beyond two are folded into the batch."""
    shape = tuple(shape)
    if len(shape) >= 4:
        return (prod(shape[:-3]), *shape[-3:])
    return (1,) * (4 - len(shape)) + shape


def _sdpa(args, kwargs, out):
    a = _bind_sdpa(args, kwargs)
    q, k, v = a["query"], a["key"], a["value"]
    qs, ks, vs = _as_4d(q.shape), _as_4d(k.shape), _as_4d(v.shape)
    flash = a["attn_mask"] is None and q.dtype in (dtypes.float16, dtypes.bfloat16)
    key, backward_key = (SDPA_FLASH, SDPA_FLASH_BACKWARD) if flash else (SDPA_EFFICIENT, SDPA_EFFICIENT_BACKWARD)
    backward = []
    if _grad(q) or _grad(k) or _grad(v):
        backward = [(backward_key, sdpa_backward_flop_count((*qs[:3], vs[3]), qs, ks, vs))]
    return (key, sdpa_flop_count(qs, ks, vs)), backward


def _einsum(args, kwargs, out):
    """A two-operand einsum runs as one bmm in torch: 2 * the product of the sizes of every
    letter kept through the contraction (a letter only one operand has and the output drops is
    summed out first)."""
    equation, operands = args[0], list(args[1:])
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = list(operands[0])
    if len(operands) != 2 or not isinstance(equation, str) or "..." in equation:
        return None
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    if not _:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    sizes = {c: s for term, t in zip(terms, operands, strict=True) for c, s in zip(term, t.shape, strict=False)}
    kept = [c for c in sizes if c in rhs or (c in terms[0] and c in terms[1])]
    flops = 2 * prod(sizes[c] for c in kept)
    return _product(BMM, flops, BMM, *operands)


RULES = {"mm": _mm, "bmm": _bmm, "addmm": _addmm, "baddbmm": _baddbmm, "matmul": _matmul, "linear": _linear,
         "einsum": _einsum, "scaled_dot_product_attention": _sdpa,
         **{f"conv{n}d": _conv_rule(n, False) for n in (1, 2, 3)},
         **{f"conv_transpose{n}d": _conv_rule(n, True) for n in (1, 2, 3)}}
