"""``torch.backends.xnnpack.enabled``: False, as a torch build without XNNPACK reports
(shardflow calls no XNNPACK kernel)."""

__all__ = ["enabled"]

enabled = False
