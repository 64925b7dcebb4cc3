"""``shardflow.utils.checkpoint.checkpoint``: activation checkpointing (PyTorch's path)."""

from ..autograd.checkpoint import checkpoint

__all__ = ["checkpoint"]
