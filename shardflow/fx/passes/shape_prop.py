"""``torch.fx.passes.shape_prop``: run a GraphModule once and record each node's tensor metadata.

``ShapeProp(gm).propagate(*args)`` runs the graph (an :class:`~shardflow.fx.Interpreter`)
and stores ``node.meta['tensor_meta']`` (a :class:`TensorMetadata`: shape, dtype,
requires_grad, stride, memory_format, is_quantized, qparams; a structure of them when the
node returns several tensors) and ``node.meta['type']`` for every node, as torch's.
Deviation: torch's ``fake_mode`` (propagating without real data) is not built; passing one
raises NotImplementedError.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...autograd.tensor import Tensor
from ...backend.memory_format import contiguous_format
from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t: Tensor) -> TensorMetadata:
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), contiguous_format,
                          bool(getattr(t, "is_quantized", False)), {})


class ShapeProp(Interpreter):
    """Records tensor metadata per node while running the graph (module docstring)."""

    def __init__(self, gm, fake_mode=None) -> None:
        if fake_mode is not None:
            raise NotImplementedError("ShapeProp(fake_mode=...): fake tensors are not built in shardflow; "
                                      "call ShapeProp(gm).propagate(*real_inputs)")
        super().__init__(gm)

    def run_node(self, n):
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the graph on ``args`` (recording metadata); returns its result."""
        return super().run(*args)
