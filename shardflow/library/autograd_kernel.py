"""The autograd side of a ``torch.library`` operator: a generated PyTorch-style
``autograd.Function`` per operator (``autograd/custom_function.py`` runs it).

``register_autograd(backward, setup_context=...)`` gives the operator torch's contract:
the kernel runs under ``no_grad``, ``setup_context(ctx, inputs, output)`` (or with
``keyword_only_inputs=`` when the function takes it) saves what backward needs, and
``backward(ctx, *grads)`` returns one gradient per positional input (None for a non-Tensor).
The node is named as torch names it (``GeneratedBackwardFor_mylib_crop_defaultBackward``).

A ``custom_op`` without a registered formula still records a node when an input requires a
gradient, whose backward raises torch's "no autograd formula was registered" error: the
result must not look like a constant.
"""

from __future__ import annotations

import inspect

from ..autograd import Function

__all__ = ["autograd_function", "no_formula_function"]


def _class_name(opdef) -> str:
    return f"GeneratedBackwardFor_{opdef.ns}_{opdef.name}_default"


def _takes_keyword_only_inputs(fn) -> bool:
    try:
        return "keyword_only_inputs" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def autograd_function(opdef, backward, setup_context):
    """The Function class for ``opdef`` with the user's ``backward`` and ``setup_context``.
    Its ``apply(*positional, kwonly_dict)``: the last argument carries the keyword-only
    inputs (no gradient slot of the user's)."""
    kw_form = setup_context is not None and _takes_keyword_only_inputs(setup_context)

    def forward(*args):
        *pos, kwonly = args
        return opdef.run_kernel(tuple(pos), kwonly)

    def setup(ctx, inputs, output):
        *pos, kwonly = inputs
        if setup_context is None:
            return
        if kw_form:
            setup_context(ctx=ctx, inputs=tuple(pos), keyword_only_inputs=kwonly, output=output)
        else:
            setup_context(ctx, tuple(pos), output)

    def backward_(ctx, *grads):
        result = backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        return (*result, None)  # the keyword-only dict's slot

    return type(_class_name(opdef), (Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup),
        "backward": staticmethod(backward_), "__module__": __name__})


def no_formula_function(opdef):
    """The Function class of a ``custom_op`` with no ``register_autograd``: backward raises."""
    def forward(*args):
        *pos, kwonly = args
        return opdef.run_kernel(tuple(pos), kwonly)

    def setup(ctx, inputs, output):
        return None

    def backward_(ctx, *grads):
        raise RuntimeError(
            f"Trying to backward through {opdef.ns}.{opdef.name}.default but no autograd formula "
            "was registered. Please use register_autograd to add one.")

    return type(_class_name(opdef), (Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup),
        "backward": staticmethod(backward_), "__module__": __name__})
