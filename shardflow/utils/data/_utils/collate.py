"""``torch.utils.data._utils.collate``: ``shardflow.data.collate``'s functions."""

from ....data.collate import default_collate, default_convert  # noqa: F401

__all__ = ["default_collate", "default_convert"]
