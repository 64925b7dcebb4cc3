"""``torch.utils.dlpack``: ``from_dlpack`` / ``to_dlpack`` (``shardflow/ops/tensor_compat.py``)."""

from ..ops.tensor_compat import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
