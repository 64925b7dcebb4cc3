"""``torch.utils.tensorboard``: ``SummaryWriter`` (over tensorboardX, imported on the first
writer; see ``writer.py``)."""

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
