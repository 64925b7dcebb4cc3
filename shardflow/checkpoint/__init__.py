"""Checkpoints (layer L5): safetensors files with the nested structure in the header
metadata, atomic writes, and refusal of raw pickle / truncated / corrupt files; PyTorch's
``torch.save`` zip format read (``pytorch_file.py``, weights only unless trusted) and written
for what safetensors cannot hold (``pytorch_writer.py``).

``shardflow.save(obj, path)`` / ``shardflow.load(path)``; ``save_file`` / ``load_file`` /
``save_model`` / ``load_model`` as in ``safetensors.torch``. See ``io.py``. Atomic writes
and the cleanup of temp files left by killed writes: ``atomic.py``.
"""

from .atomic import atomic_write, clean_stale_temp_files
from .io import (
    CheckpointError,
    CheckpointSkippedWarning,
    checkpoint_files,
    find_latest,
    load,
    load_file,
    load_model,
    save,
    save_file,
    save_model,
    scan_checkpoints,
    skipped_message,
)

__all__ = ["save", "load", "save_file", "load_file", "save_model", "load_model", "find_latest",
           "scan_checkpoints", "checkpoint_files", "skipped_message", "CheckpointError", "CheckpointSkippedWarning", "atomic_write",
           "clean_stale_temp_files"]
