"""torch's module path of ``CheckpointException`` (it lives in ``metadata.py``)."""

from .metadata import CheckpointException

__all__ = ["CheckpointException"]
