"""The autograd side of a ``torch.library`` operator: a generated PyTorch-style
``autograd.Function`` per operator (``autograd/custom_function.py`` runs it).

``register_autograd(backward, setup_context=...)`` gives the operator torch's contract:
the kernel runs under ``no_grad``, ``setup_context(ctx, inputs, output)`` (or with
``keyword_only_inputs=`` when the function takes it) saves what backward needs, and
``backward(ctx, *grads)`` returns one gradient per positional input (None for a non-Tensor,
a list for a ``Tensor[]`` input: each of its Tensors is an input of the node of its own).
The node is named as torch names it (``GeneratedBackwardFor_mylib_crop_defaultBackward``).

A ``custom_op`` without a registered formula still records a node when an input requires a
gradient, whose backward raises torch's "no autograd formula was registered" error: the
result must not look like a constant.
"""

from __future__ import annotations

import inspect

from ..autograd import Function, Tensor

__all__ = ["autograd_function", "no_formula_function", "flatten_args"]


def _class_name(opdef) -> str:
    return f"GeneratedBackwardFor_{opdef.ns}_{opdef.name}_default"


def _takes_keyword_only_inputs(fn) -> bool:
    try:
        return "keyword_only_inputs" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def flatten_args(pos: tuple, kwonly: dict) -> tuple:
    """``apply``'s arguments for the generated Function: each Tensor of a Tensor-list argument
    becomes its own positional input (so it gets its own gradient slot), then one last
    argument ``(list lengths, keyword-only inputs)`` to rebuild the call."""
    flat, lengths = [], []
    for v in pos:
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, Tensor) or x is None for x in v):
            flat.extend(v)
            lengths.append(len(v))
        else:
            flat.append(v)
            lengths.append(None)
    return (*flat, (tuple(lengths), kwonly))


def _rebuild(flat: tuple, lengths: tuple) -> tuple:
    out, i = [], 0
    for n in lengths:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i:i + n]))
            i += n
    return tuple(out)


def _unpack(args):
    *flat, (lengths, kwonly) = args
    return _rebuild(tuple(flat), lengths), kwonly, lengths


def autograd_function(opdef, backward, setup_context):
    """The Function class for ``opdef`` with the user's ``backward`` and ``setup_context``,
    applied to :func:`flatten_args`'s arguments."""
    kw_form = setup_context is not None and _takes_keyword_only_inputs(setup_context)

    def forward(*args):
        pos, kwonly, _ = _unpack(args)
        return opdef.run_kernel(pos, kwonly)

    def setup(ctx, inputs, output):
        pos, kwonly, lengths = _unpack(inputs)
        ctx._sf_list_lengths = lengths
        if setup_context is None:
            return
        if kw_form:
            setup_context(ctx=ctx, inputs=pos, keyword_only_inputs=kwonly, output=output)
        else:
            setup_context(ctx, pos, output)

    def backward_(ctx, *grads):
        result = backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        flat = []
        for g, n in zip(result, ctx._sf_list_lengths):
            if n is None:
                flat.append(g)
            else:
                flat.extend([None] * n if g is None else list(g))
        flat += list(result[len(ctx._sf_list_lengths):])  # extra entries: the engine's count check
        if len(result) < len(ctx._sf_list_lengths):
            return tuple(result)  # too few: the engine names the count torch names
        return (*flat, None)  # the last slot: lengths and keyword-only inputs

    return type(_class_name(opdef), (Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup),
        "backward": staticmethod(backward_), "__module__": __name__})


def no_formula_function(opdef):
    """The Function class of a ``custom_op`` with no ``register_autograd``: backward raises."""
    def forward(*args):
        pos, kwonly, _ = _unpack(args)
        return opdef.run_kernel(pos, kwonly)

    def setup(ctx, inputs, output):
        return None

    def backward_(ctx, *grads):
        raise RuntimeError(
            f"Trying to backward through {opdef.ns}.{opdef.name}.default but no autograd formula "
            "was registered. Please use register_autograd to add one.")

    return type(_class_name(opdef), (Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup),
        "backward": staticmethod(backward_), "__module__": __name__})
