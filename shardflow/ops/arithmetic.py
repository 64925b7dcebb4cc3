"""Binary arithmetic: add, sub, mul, div (with ``alpha`` / ``rounding_mode``), their in-place
forms, and neg. This file is the template for an op family:

* a ``Function`` subclass per op works on raw arrays; ``save_inputs`` says which inputs
  backward reads (for the in-place-modification check);
* the functional form (registered under the PyTorch name) promotes dtypes and handles
  Python scalars, then calls ``Function.apply``; a two-input op also registers its
  two-argument form, ``function.binary_operator(cls, general)``, which ``x * y`` calls
  directly and which builds the node itself for same-dtype Tensors (the per-op hot path)
  and calls the general form for anything else;
* the in-place form computes out of place and hands the result to ``inplace``.

What a node keeps is what torch saves: ``Mul``/``Div`` keep both operands when both need
gradients; when only one does, ``binary_operator`` makes the class's ``partial_nodes``
(``MulSavingOther``, ``MulSavingSelf``, ``DivSavingOther``), which keep only the operand that
gradient reads and the other's shape, and a Tensor with a number goes straight to
``MulSavingOther`` / ``DivSavingOther`` (``h * 0.5`` keeps no ``h``: a chain of them held
every input alive until backward). ``Add``/``Sub``/``Neg`` keep no tensor.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..autograd.function import apply_binary, binary_operator, input_shape
from . import _grad_graph as _gg
from ._util import _shape, as_dtype_of, inplace, number_arg, promote, unbroadcast, wrap_int_operand

_SHAPE_ERR = (
    "The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
    "dimension {d}: shapes {sa} and {sb} do not broadcast"
)


# _KEEPS_DTYPE: ``as_dtype_of(y, a, b)`` changes a result only when NumPy widened a
# bfloat16 array combined with a Python scalar (or a scaled operand, ``b * alpha``); when
# ``y`` is ``a <op> b`` for two NumPy arrays it returns ``y``, so the forwards below skip
# its two dtype reads (~600 instructions of a 16-element op) for an array ``b``.
# tests/autograd/test_op_path.py checks this for every pair of dtypes.
_ndarray = np.ndarray
# the dtype classes of kind "c": ``type(g.dtype) in`` this is ``g.dtype.kind == "c"`` with one
# NumPy attribute read less (~200 instructions of a backward node)
_COMPLEX_DTYPES = frozenset(type(np.dtype(c)) for c in "FDG")


def _half_scalar(a, b) -> bool:
    """``a`` a float16/bfloat16 array and ``b`` a real scalar (a Python or NumPy number):
    PyTorch computes such an op in float32 (its opmath type) with the scalar in float32 and
    rounds once; NumPy rounds the scalar to the 2-byte dtype first (``x / 2.8284`` divided
    by 2.828125 in bfloat16; ``x * 0.1`` in float16 differed in a third of the elements)."""
    return (a.dtype.itemsize == 2 and a.dtype.kind in "fV" and not hasattr(b, "shape")
            and not isinstance(b, complex))


def _wide(a, b, op):
    """``op(a, b)`` for :func:`_half_scalar` operands, as PyTorch computes it."""
    return op(a.astype(np.float32), np.float32(b)).astype(a.dtype)


def _wide_alpha(a, b, alpha, sign):
    """``a + sign * alpha * b`` for a float16/bfloat16/float32 ``a`` and ``alpha != 1``, as
    PyTorch's CPU kernel computes it: one fused multiply-add in float32 (for the 2-byte
    dtypes with ``alpha`` and a scalar ``b`` first rounded to that dtype), rounded once to
    ``a``'s dtype. The product of two float32 numbers is exact in float64, so the float64
    sum rounded to float32 is the fused result (``a + b * alpha`` rounded twice: a
    quarter of float32 results were one unit off). float64 keeps NumPy's two roundings."""
    dt = a.dtype
    al = np.float64(np.float32(dt.type(alpha) if dt.itemsize == 2 else alpha))
    b64 = b.astype(np.float64) if hasattr(b, "shape") else np.float64(np.float32(dt.type(b)))
    y = a.astype(np.float64)
    y += (sign * al) * b64
    return y.astype(np.float32).astype(dt)


def _fused_alpha(a, b, alpha) -> bool:
    """``add``/``sub`` with ``alpha`` that :func:`_wide_alpha` computes: a real float32 or
    2-byte ``a`` and a ``b`` of the same dtype or a real scalar."""
    if alpha == 1 or a.dtype.kind not in "fV" or a.dtype.itemsize > 4 or isinstance(alpha, complex):
        return False
    if hasattr(b, "shape"):
        return b.dtype == a.dtype
    return not isinstance(b, complex)


def _is_half(a) -> bool:
    return a.dtype.itemsize == 2 and a.dtype.kind in "fV"


def _scaled(g, alpha):
    """``g * alpha`` (a gradient times a number) in ``g``'s dtype, computed as PyTorch does."""
    return _wide(g, alpha, np.multiply) if _half_scalar(g, alpha) else as_dtype_of(g * alpha, g)


def _broadcast_error(sa, sb) -> RuntimeError:
    ra, rb = tuple(reversed(sa)), tuple(reversed(sb))
    for i in range(min(len(ra), len(rb))):
        if ra[i] != rb[i] and ra[i] != 1 and rb[i] != 1:
            return RuntimeError(
                _SHAPE_ERR.format(a=ra[i], b=rb[i], d=max(len(sa), len(sb)) - 1 - i, sa=tuple(sa), sb=tuple(sb))
            )
    return RuntimeError(f"shapes {tuple(sa)} and {tuple(sb)} do not broadcast")


class Add(Function):
    save_inputs = ()

    def forward(self, a, b, alpha=1):
        # ``a`` is always an array (a Tensor comes first, see ``add``); ``b`` may be a number
        try:
            # (array + array with alpha 1, the common case, tests one type first)
            if alpha == 1 and (type(b) is _ndarray or not _half_scalar(a, b)):
                y = a + b
            elif alpha == 1:  # a 2-byte float and a number: the number rounded to a's dtype first
                y = _wide(a, a.dtype.type(b), np.add)
            elif _fused_alpha(a, b, alpha):
                y = _wide_alpha(a, b, alpha, 1)
            else:
                y = a + b * alpha
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None
        self.sa = a.shape
        self.sb = getattr(b, "shape", ())
        self.alpha = alpha
        if alpha == 1 and type(b) is _ndarray:  # NumPy's result dtype (see _KEEPS_DTYPE)
            return y
        return y if y.dtype is a.dtype else as_dtype_of(y, a, b)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        shape = g.shape
        ga = gb = None
        if need_a:
            ga = g if shape == self.sa else unbroadcast(g, self.sa)
        if need_b:
            gb = g if self.alpha == 1 else _scaled(g, self.alpha)
            if shape != self.sb:
                gb = unbroadcast(gb, self.sb)
        return ga, gb

    def backward_graph(self, g):
        need_a, need_b = self.needs_input_grad
        return (g if need_a else None,
                (g if self.alpha == 1 else g * self.alpha) if need_b else None)


class Sub(Function):
    save_inputs = ()

    def forward(self, a, b, alpha=1):
        try:
            if alpha == 1 and (type(b) is _ndarray or not _half_scalar(a, b)):
                y = a - b
            elif alpha == 1:  # a 2-byte float and a number: the number rounded to a's dtype first
                y = _wide(a, a.dtype.type(b), np.subtract)
            elif _fused_alpha(a, b, alpha):
                y = _wide_alpha(a, b, alpha, -1)
            else:
                y = a - b * alpha
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None
        except TypeError:  # NumPy refuses bool - bool (torch's RuntimeError, its words)
            if a.dtype.kind == "b":
                raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                                   "Use the `^` or `logical_xor()` operator instead.") from None
            raise
        self.sa = a.shape
        self.sb = getattr(b, "shape", ())
        self.alpha = alpha
        if alpha == 1 and type(b) is _ndarray:  # NumPy's result dtype (see _KEEPS_DTYPE)
            return y
        return y if y.dtype is a.dtype else as_dtype_of(y, a, b)

    def backward(self, g):
        need_a, need_b = self.needs_input_grad
        shape = g.shape
        ga = gb = None
        if need_a:
            ga = g if shape == self.sa else unbroadcast(g, self.sa)
        if need_b:
            gb = -g if self.alpha == 1 else _scaled(g, -self.alpha)
            if shape != self.sb:
                gb = unbroadcast(gb, self.sb)
        return ga, gb

    def backward_graph(self, g):
        need_a, need_b = self.needs_input_grad
        return (g if need_a else None,
                (-g if self.alpha == 1 else g * -self.alpha) if need_b else None)


class RsubScalar(Add):
    """``number - tensor`` (``4.2 - b``, ``1 - p``; a float mask too): one node, named torch's
    ``RsubBackward1`` (it printed ``AddBackward0`` over a ``NegBackward0``). The value is Add's
    of ``-b`` and the number, as before (negation is exact, so ``-b + a`` is ``a - b``),
    with Add's rounding of a number against a 2-byte float."""

    torch_name = "RsubBackward1"

    def forward(self, b, *, other):
        try:
            negated = -b
        except TypeError:  # NumPy refuses -bool (torch's RuntimeError, its words)
            if b.dtype.kind == "b":
                raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If "
                                   "you are trying to invert a mask, use the `~` or `logical_not()` operator "
                                   "instead.") from None
            raise
        return super().forward(negated, other)

    def backward(self, g):
        return -g

    def backward_graph(self, g):
        return -g


def _conj(x):
    """``x`` conjugated when complex: for a complex product PyTorch's gradient is
    ``g * conj(other)`` (conjugate Wirtinger calculus). Real operands pass untouched."""
    if isinstance(x, complex) or (hasattr(x, "dtype") and x.dtype.kind == "c"):
        return x.conjugate()
    return x


class Mul(Function):
    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a = a
        self.b = b
        try:
            y = a * b if type(b) is _ndarray or not _half_scalar(a, b) else _wide(a, b, np.multiply)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None
        # two NumPy arrays: NumPy's result dtype is the one as_dtype_of keeps (_KEEPS_DTYPE)
        return y if type(b) is _ndarray or y.dtype is a.dtype else as_dtype_of(y, a, b)

    def backward(self, g):
        a = self.a
        b = self.b
        need_a, need_b = self.needs_input_grad
        if type(g.dtype) in _COMPLEX_DTYPES:  # a complex operand makes a complex result
            a, b = _conj(a), _conj(b)
        # g has the output's shape (the engine fits every gradient to ``_out_shape``), and so
        # have g * b and g * a: an input of another shape was broadcast. One NumPy attribute
        # read per input (~300 instructions each) where ndim and size were two.
        out_shape = self._out_shape
        ga = gb = None
        if need_a:
            ga = g * b if type(b) is _ndarray or not _half_scalar(g, b) else _scaled(g, b)
            if a.shape != out_shape:
                ga = unbroadcast(ga, a.shape)
        if need_b:
            gb = g * a
            if b.shape != out_shape:
                gb = unbroadcast(gb, b.shape)
        return ga, gb

    def backward_graph(self, g):
        # the engine sums a gradient of the output's shape back over broadcast dims
        need_a, need_b = self.needs_input_grad
        return (g * _gg.conj(self.saved_input(1)) if need_a else None,
                g * _gg.conj(self.saved_input(0)) if need_b else None)


class MulSavingOther(Mul):
    """``x * y`` where only ``x`` needs a gradient (``h * 0.5``, ``h * mask``, ``h * c`` with a
    0-d or constant ``c``): keeps ``y`` (a Python number is kept as is, never packed) and
    ``x``'s shape, not ``x``, as torch's MulBackward0 saves only ``other`` then. Thirty
    chained ``h * 0.5`` kept thirty inputs alive until backward."""

    torch_name = "MulBackward0"
    save_inputs = (1,)
    unsaved_inputs = (0,)

    def forward(self, a, b):
        self.b = b
        try:
            y = a * b if type(b) is _ndarray or not _half_scalar(a, b) else _wide(a, b, np.multiply)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None
        return y if type(b) is _ndarray or y.dtype is a.dtype else as_dtype_of(y, a, b)

    def backward(self, g):
        b = self.b
        if type(g.dtype) in _COMPLEX_DTYPES:
            b = _conj(b)
        ga = g * b if type(b) is _ndarray or not _half_scalar(g, b) else _scaled(g, b)
        shape = input_shape(self, 0)  # (not kept: see _input_shape)
        if shape != self._out_shape:
            ga = unbroadcast(ga, shape)
        return ga, None

    def backward_graph(self, g):
        return g * _gg.conj(self.saved_input(1)), None


class MulSavingSelf(Mul):
    """``c * x`` where only ``x`` (input 1) needs a gradient: keeps ``c`` and ``x``'s shape
    (torch's MulBackward0 saves only ``self`` then)."""

    torch_name = "MulBackward0"
    save_inputs = (0,)
    unsaved_inputs = (1,)

    def forward(self, a, b):
        self.a = a
        try:
            y = a * b
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None
        return y

    def backward(self, g):
        a = self.a
        if type(g.dtype) in _COMPLEX_DTYPES:
            a = _conj(a)
        gb = g * a
        shape = input_shape(self, 1)  # (not kept: see _input_shape)
        if shape != self._out_shape:
            gb = unbroadcast(gb, shape)
        return None, gb

    def backward_graph(self, g):
        return None, g * _gg.conj(self.saved_input(0))


# the nodes binary_operator makes when only input 0 / only input 1 needs a gradient
Mul.partial_nodes = (MulSavingOther, MulSavingSelf)


class Div(Function):
    save_inputs = (0, 1)

    def forward(self, a, b):
        self.a = a
        self.b = b
        try:
            y = a / b if type(b) is _ndarray or not _half_scalar(a, b) else _wide(a, b, np.true_divide)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None
        return y if type(b) is _ndarray or y.dtype is a.dtype else as_dtype_of(y, a, b)

    def backward(self, g):
        a = self.a
        b = self.b
        need_a, need_b = self.needs_input_grad
        if type(g.dtype) in _COMPLEX_DTYPES:  # a complex operand makes a complex result
            a, b = _conj(a), _conj(b)
        out_shape = self._out_shape  # g's shape (see Mul)
        ga = gb = None
        if need_a:
            ga = g / b if type(b) is _ndarray or not _half_scalar(g, b) else _wide(g, b, np.true_divide)
            if a.shape != out_shape:  # a was broadcast
                ga = unbroadcast(ga, a.shape)
        if need_b:  # torch's order, -grad * ((self / other) / other): an ulp apart otherwise
            gb = -g * ((a / b) / b)
            if b.shape != out_shape:
                gb = unbroadcast(gb, b.shape)
        return ga, gb

    def backward_graph(self, g):
        need_a, need_b = self.needs_input_grad
        b = _gg.conj(self.saved_input(1))
        ga = g / b if need_a else None
        gb = -g * ((_gg.conj(self.saved_input(0)) / b) / b) if need_b else None  # (backward's order)
        return ga, gb


class DivSavingOther(Div):
    """``x / y`` where only ``x`` needs a gradient (``logits / temperature``, ``x / 255``):
    keeps ``y`` and ``x``'s shape, not ``x``, as torch's DivBackward0 saves only ``other``
    then (when ``y`` needs one too, torch saves both: :class:`Div`)."""

    torch_name = "DivBackward0"
    save_inputs = (1,)
    unsaved_inputs = (0,)

    def forward(self, a, b):
        self.b = b
        try:
            y = a / b if type(b) is _ndarray or not _half_scalar(a, b) else _wide(a, b, np.true_divide)
        except ValueError:
            raise _broadcast_error(_shape(a), _shape(b)) from None
        return y if type(b) is _ndarray or y.dtype is a.dtype else as_dtype_of(y, a, b)

    def backward(self, g):
        b = self.b
        if type(g.dtype) in _COMPLEX_DTYPES:
            b = _conj(b)
        ga = g / b if type(b) is _ndarray or not _half_scalar(g, b) else _wide(g, b, np.true_divide)
        shape = input_shape(self, 0)  # (not kept: see _input_shape)
        if shape != self._out_shape:
            ga = unbroadcast(ga, shape)
        return ga, None

    def backward_graph(self, g):
        return g / _gg.conj(self.saved_input(1)), None


Div.partial_nodes = (DivSavingOther, Div)


class Neg(Function):
    save_inputs = ()

    def forward(self, a):
        try:
            return -a
        except TypeError:  # NumPy refuses -bool (torch's RuntimeError, its words)
            if a.dtype.kind == "b":
                raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                                   "are trying to invert a mask, use the `~` or `logical_not()` operator "
                                   "instead.") from None
            raise

    def backward(self, g):
        return -g

    def backward_graph(self, g):
        return -g


def _add_general(input, other, alpha=1):
    if type(alpha) is not int:
        alpha = number_arg(alpha, "add", "alpha")
    a, b = promote(input, other)
    if type(b) is int and type(alpha) is int and alpha != 1:  # other * alpha, wrapped as one scalar
        b, alpha = b * alpha, 1
    a, b = wrap_int_operand(a, b)
    if not isinstance(a, Tensor):  # scalar + Tensor: keep the Tensor first (commutative)
        return Add.apply(b, a, alpha=1) if alpha == 1 else Add.apply(b * alpha, a)
    return Add.apply(a, b, alpha=alpha)


# ``x + y`` (Tensor.__add__) and add(x, y): same-dtype Tensors build the node directly
# (function.binary_operator), anything else goes through promote
_add_operator = binary_operator(Add, _add_general)
_add_dunder = binary_operator(Add, _add_general, dunder=True)  # x + y


def _deprecated_alpha_first(name, other, rest, alpha):
    """PyTorch's deprecated overload ``add(input, alpha, other)`` / ``x.add_(alpha, other)``
    (a Number then a Tensor or Number; old tutorials' ``p.data.add_(-lr, p.grad.data)``):
    accepted with torch's UserWarning, as ``other=rest[0], alpha=<that number>``. (torch
    warns once per process; this warns through Python's filters, by default once per
    calling line.)"""
    import numbers
    import warnings

    if (len(rest) != 1 or alpha != 1 or not isinstance(other, numbers.Number)
            or not isinstance(rest[0], Tensor | numbers.Number)):
        raise TypeError(
            f"{name}() takes (input, other, *, alpha=1); the deprecated {name}(input, alpha, other) "
            f"form needs exactly a Number then a Tensor and no alpha=, got "
            f"{(type(other).__name__, *(type(r).__name__ for r in rest))} (alpha={alpha!r})")
    warnings.warn(
        f"This overload of {name} is deprecated:\n\t{name}(Number alpha, Tensor other)\n"
        f"Consider using one of the following signatures instead:\n"
        f"\t{name}(Tensor other, *, Number alpha = 1)", UserWarning, stacklevel=3)
    return rest[0], other


@register("add", operator=_add_dunder)
def add(input, other, *deprecated, alpha=1):
    if deprecated:
        other, alpha = _deprecated_alpha_first("add", other, deprecated, alpha)
    if alpha == 1:
        return _add_operator(input, other)
    return _add_general(input, other, alpha)


def _is_bool_tensor(x) -> bool:
    return isinstance(x, Tensor) and x.array.dtype.kind == "b"


def _sub_general(input, other, alpha=1):
    # torch refuses a bool on either side, a Python bool included (``1 - mask``, ``True - x``:
    # a bool scalar would otherwise count as 1 and give a number); bool against bool is
    # refused in its own words (NumPy refuses that pair itself)
    bool_a = _is_bool_tensor(input) or isinstance(input, bool)
    bool_b = _is_bool_tensor(other) or isinstance(other, bool)
    if bool_a and bool_b:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                           "`^` or `logical_xor()` operator instead.")
    if bool_a or bool_b:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    if type(alpha) is not int:
        alpha = number_arg(alpha, "sub", "alpha")
    a, b = promote(input, other)
    if type(b) is int and type(alpha) is int and alpha != 1:  # other * alpha, wrapped as one scalar
        b, alpha = b * alpha, 1
    a, b = wrap_int_operand(a, b)
    if not isinstance(a, Tensor):  # scalar - Tensor
        return RsubScalar.apply(b, other=a) if alpha == 1 else Add.apply(b * -alpha, a)
    return Sub.apply(a, b, alpha=alpha)


_sub_operator = binary_operator(Sub, _sub_general)
_sub_dunder = binary_operator(Sub, _sub_general, dunder=True)  # x - y


@register("sub", "subtract", operator=_sub_dunder)
def sub(input, other, *deprecated, alpha=1):
    if deprecated:
        other, alpha = _deprecated_alpha_first("sub", other, deprecated, alpha)
    if alpha == 1:
        return _sub_operator(input, other)
    return _sub_general(input, other, alpha)


def _mul_general(input, other):
    a, b = wrap_int_operand(*promote(input, other))
    if not isinstance(a, Tensor):  # number * tensor: the tensor first, the number kept alone
        return MulSavingOther.apply(b, a)
    if not isinstance(b, Tensor):
        return MulSavingOther.apply(a, b)
    return apply_binary(Mul, a, b)  # promoted to one dtype: the two-Tensor path


_mul_operator = binary_operator(Mul, _mul_general)
_mul_dunder = binary_operator(Mul, _mul_general, dunder=True)  # x * y


@register("mul", "multiply", operator=_mul_dunder)
def mul(input, other):
    return _mul_operator(input, other)


def _int_div_dtype_fix(a, b):
    """True division always gives a float (PyTorch): ints are cast to the default float
    (complex tensors stay complex)."""
    from ..backend import dtypes
    from .conversion import to_dtype

    f = dtypes.get_default_dtype()
    if isinstance(a, Tensor) and not a.dtype.is_floating_point and not a.dtype.is_complex:
        a = to_dtype(a, f)
    if isinstance(b, Tensor) and not b.dtype.is_floating_point and not b.dtype.is_complex:
        b = to_dtype(b, f)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        a, b = promote(a, b)
    return a, b


def _div_general(input, other, rounding_mode=None):
    a, b = promote(input, other)
    if rounding_mode is not None:
        from .rounding import _rounded_div

        return _rounded_div(a, b, rounding_mode)
    a, b = _int_div_dtype_fix(a, b)
    if not isinstance(a, Tensor):  # number / tensor: torch's __rtruediv__ is reciprocal() * number
        return MulSavingOther.apply(Reciprocal.apply(b), a)
    # tensor / number: PyTorch divides, correctly rounded (uint8 110 / 255 is 0.43137255 in
    # float32; it was 0.43137258 through * (1 / 255)). For float16/bfloat16 it divides in
    # float32 by the float32 number and rounds once (Div.forward, _half_scalar): the number
    # stays a Python float there, not a 2-byte scalar.
    if not isinstance(b, Tensor):  # a NumPy scalar of a's dtype: a CuPy array takes it too
        return DivSavingOther.apply(a, b if _is_half(a.array) else a.array.dtype.type(b))
    return apply_binary(Div, a, b)  # promoted to one dtype: the two-Tensor path


# floating tensors only: integer true division gives the default float (_int_div_dtype_fix)
_div_operator = binary_operator(Div, _div_general, kinds="f")
_div_dunder = binary_operator(Div, _div_general, kinds="f", dunder=True)  # x / y


@register("div", "divide", "true_divide", operator=_div_dunder)
def div(input, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _div_operator(input, other)
    return _div_general(input, other, rounding_mode)


class Reciprocal(Function):
    save_inputs = ()
    save_output = True

    def forward(self, a):
        self.out = as_dtype_of(1.0 / a, a)
        return self.out

    def backward(self, g):
        out = _conj(self.out)
        return -g * (out * out)  # torch's order: -grad * (result * result).conj()

    def backward_graph(self, g):
        out = _gg.conj(self.saved_output(0, self.out))
        return -g * (out * out)


@register("reciprocal")
def reciprocal(input):
    a, _ = _int_div_dtype_fix(input, None)
    return Reciprocal.apply(a)


@register("neg", "negative")
def neg(input):
    return Neg.apply(input)


@register("add_")
def add_(t, other, *deprecated, alpha=1):
    if deprecated:
        other, alpha = _deprecated_alpha_first("add_", other, deprecated, alpha)
    return inplace(t, add(t, other, alpha=alpha))


@register("sub_")
def sub_(t, other, *deprecated, alpha=1):
    if deprecated:
        other, alpha = _deprecated_alpha_first("sub_", other, deprecated, alpha)
    return inplace(t, sub(t, other, alpha=alpha))


@register("mul_")
def mul_(t, other):
    return inplace(t, mul(t, other))


@register("div_")
def div_(t, other, *, rounding_mode=None):
    return inplace(t, div(t, other, rounding_mode=rounding_mode))


@register("neg_", "negative_")
def neg_(t):
    return inplace(t, neg(t))
