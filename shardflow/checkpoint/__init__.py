"""Checkpoints (layer L5): safetensors files with the nested structure in the header
metadata, atomic writes, and refusal of pickle / truncated / corrupt files.

``shardflow.save(obj, path)`` / ``shardflow.load(path)``; ``save_file`` / ``load_file`` /
``save_model`` / ``load_model`` as in ``safetensors.torch``. See ``io.py``.
"""

from .io import (
    CheckpointError,
    find_latest,
    load,
    load_file,
    load_model,
    save,
    save_file,
    save_model,
)
from .safetensors import atomic_write

__all__ = ["save", "load", "save_file", "load_file", "save_model", "load_model", "find_latest",
           "CheckpointError", "atomic_write"]
