"""torch's ``grad_fn._saved_<name>`` attributes: the tensors a node saved for backward, read
for debugging (pytorch/tutorials' saved-tensors-hooks tutorial prints them).

torch generates one property per saved value of each node (``MulBackward0._saved_self`` and
``_saved_other``, ``ExpBackward0._saved_result``). shardflow's nodes keep what their backward
reads as attributes under conventional names (``x``, or ``a``/``b`` for inputs 0/1; ``y``
for the output; see ``Function.saved_input``), so three descriptors on ``Function``
(``function._TorchSaved``, one per name; a ``__getattr__`` would slow every node attribute
read) map torch's three common names:

* ``_saved_self`` -- input 0, ``_saved_other`` -- input 1: through ``saved_input``, so a leaf
  input is the leaf itself (``y.grad_fn._saved_self is a`` is True, as in torch) and any
  other is a new Tensor on the same data with the input's history;
* ``_saved_result`` -- the output: a new Tensor on the output's data linked to the node
  (``.equal(y)`` True, ``is y`` False, as in torch).

Under ``saved_tensors_hooks`` the saved value is unpacked on every read (the unpack hook
runs each time; an unpack that fails raises, as torch's does). After the node's backward has
freed it, reading raises torch's "directly access saved tensors after they have already been
freed" error. An input the node does not keep because its gradient is not needed (``x * 2`` keeps no
``x``: ``unsaved_inputs`` of its class) reads None, as torch's. Other ``_saved_*`` names raise AttributeError (shardflow does not keep torch's
per-op scalars such as ``_saved_alpha``), and so does a name whose array is not of the
tensor's shape (the node keeps a transformed copy, which is not what torch would return).
"""

from __future__ import annotations

from .function import Function
from .saved_names import SAVED_INPUT_NAMES, SAVED_OUTPUT_NAME

# torch's name -> (input index, or None for the output; the node attributes that may hold it)
TORCH_SAVED = {
    "_saved_self": (0, SAVED_INPUT_NAMES[0]),
    "_saved_other": (1, SAVED_INPUT_NAMES[1]),
    "_saved_result": (None, (SAVED_OUTPUT_NAME,)),
}


def saved_attribute(fn, name: str):
    """``fn.<name>`` for one of :data:`TORCH_SAVED` (module docstring)."""
    from .saved_hooks import _Packed

    index, attributes = TORCH_SAVED[name]
    if fn._freed:
        raise RuntimeError(
            "Trying to backward through the graph a second time (or directly access saved tensors after they have "
            "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
            "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
            "you need to access saved tensors after calling backward.")
    if index is not None and index in getattr(fn, "unsaved_inputs", ()):
        return None  # torch's value for an input the node does not save (``(x * 2).grad_fn._saved_self``)
    d = fn.__dict__
    packed = d.get("_sf_packed") or {}
    for attribute in attributes:
        value = packed.get(attribute)
        if isinstance(value, _Packed):
            value = value.unpacked(f"{name} of {fn.name()}")
        elif value is None:
            value = d.get(attribute)
        if value is None:
            continue
        if not hasattr(value, "dtype"):  # a Python number the op kept (x * 2)
            return value
        expected = _expected_shape(fn, index)
        if expected is not None and tuple(value.shape) != tuple(expected):
            break  # the node keeps a transformed copy, not the tensor itself: not torch's value
        return fn.saved_output(0, value) if index is None else fn.saved_input(index, value)
    raise AttributeError(f"'{fn.name()}' object has no attribute '{name}' (this node keeps no such saved tensor)")


def _expected_shape(fn, index):
    """The shape of input ``index`` (None: the output) as the graph records it, or None when
    it does not."""
    if index is None:
        return fn._out_shape if fn._out_meta is None else None
    edges = fn._edges
    edge = edges[index] if index < len(edges) else None
    if edge is None:
        return None
    if type(edge) is tuple:
        producer, k = edge
        meta = producer._out_meta
        return meta[k][0] if meta is not None else None
    if isinstance(edge, Function):
        return edge._out_shape if edge._out_meta is None else edge._out_meta[0][0]
    return edge.shape  # a leaf Tensor
