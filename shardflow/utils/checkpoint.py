"""``shardflow.utils.checkpoint.checkpoint``: activation checkpointing (PyTorch's path)."""

from ..autograd.recompute import checkpoint

__all__ = ["checkpoint"]
