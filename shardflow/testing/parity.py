"""Run a PyTorch model file on shardflow with only its imports changed.

``load_torch_file(path, use_shardflow=True)`` reads the file, rewrites its ``torch`` imports
(``import torch`` -> ``import shardflow as torch``, ``import torch.nn as nn`` ->
``import shardflow.nn as nn``, ``from torch.nn import functional as F`` -> ``from
shardflow.nn import functional as F`` ...) and executes it as a fresh module. Nothing else in
the file changes: this is the compatibility promise made to PyTorch users, tested literally.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

_IMPORT_RULES = [
    (re.compile(r"^(\s*)import torch\.nn\.functional as (\w+)\s*$", re.M), r"\1import shardflow.nn.functional as \2"),
    (re.compile(r"^(\s*)import torch\.nn as (\w+)\s*$", re.M), r"\1import shardflow.nn as \2"),
    (re.compile(r"^(\s*)import torch\.optim as (\w+)\s*$", re.M), r"\1import shardflow.optim as \2"),
    # any other submodule: import torch.distributed as dist -> import shardflow.distributed ...
    (re.compile(r"^(\s*)import torch\.([\w.]+) as (\w+)\s*$", re.M), r"\1import shardflow.\2 as \3"),
    (re.compile(r"^(\s*)import torch\s*$", re.M), r"\1import shardflow as torch"),
    (re.compile(r"^(\s*)from torch(\.[\w.]+)? import (.+)$", re.M), r"\1from shardflow\2 import \3"),
]


def rewrite_imports(source: str) -> str:
    for pattern, repl in _IMPORT_RULES:
        source = pattern.sub(repl, source)
    return source


def load_torch_file(path, use_shardflow: bool = True, name: str | None = None) -> types.ModuleType:
    path = Path(path)
    source = path.read_text()
    if use_shardflow:
        source = rewrite_imports(source)
    module = types.ModuleType(name or f"{path.stem}_{'shardflow' if use_shardflow else 'torch'}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # dataclasses and pickling look the module up
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module
