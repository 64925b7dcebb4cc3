"""Run a PyTorch model file on shardflow with only its imports changed.

``load_torch_file(path, use_shardflow=True)`` reads the file, rewrites its ``torch`` imports
(``import torch`` -> ``import shardflow as torch``, ``import functorch as ft`` -> ``import
shardflow.functorch as ft``, ``import torch.nn as nn`` ->
``import shardflow.nn as nn``, ``from torch.nn import functional as F`` -> ``from
shardflow.nn import functional as F``, ``import torch.utils.data`` -> ``shardflow`` bound to
the name ``torch`` with ``shardflow.utils.data`` loaded ...) and executes it as a fresh
module. Nothing else in the file changes: this is the compatibility promise made to PyTorch
users, tested literally. A rewritten module with a global that still comes from PyTorch (an
import form these rules miss, torchvision) raises ImportError naming it instead of running
on torch.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

_TAIL = r"([ \t]*(?:#.*)?)$"  # trailing spaces and a comment, kept as they were

_IMPORT_RULES = [
    # any submodule with an alias: import torch.distributed as dist -> shardflow.distributed
    (re.compile(r"^([ \t]*)import torch\.([\w.]+) as (\w+)" + _TAIL, re.M), r"\1import shardflow.\2 as \3\4"),
    # import torch.utils.data (no alias) binds the name torch and loads the submodule
    (re.compile(r"^([ \t]*)import torch\.([\w.]+)" + _TAIL, re.M),
     r'\1import shardflow as torch; __import__("shardflow.\2")\3'),
    (re.compile(r"^([ \t]*)import torch" + _TAIL, re.M), r"\1import shardflow as torch\2"),
    # import torch, numpy as np (a comma list naming torch or torch.x among other modules)
    (re.compile(r"^([ \t]*)import ([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)+)"
                + _TAIL, re.M), lambda m: m[1] + "import " + _import_list(m[2]) + m[3]),
    (re.compile(r"^([ \t]*)from torch(\.[\w.]+)? import (.+)$", re.M), r"\1from shardflow\2 import \3"),
    # functorch (torch 2.x still ships it): shardflow.functorch
    (re.compile(r"^([ \t]*)import functorch as (\w+)" + _TAIL, re.M), r"\1import shardflow.functorch as \2\3"),
    (re.compile(r"^([ \t]*)import functorch" + _TAIL, re.M), r"\1import shardflow.functorch as functorch\2"),
    (re.compile(r"^([ \t]*)from functorch import (.+)$", re.M), r"\1from shardflow.functorch import \2"),
]


def _import_list(items: str) -> str:
    """``torch, numpy as np`` -> ``shardflow as torch, numpy as np``: each item naming torch is
    rewritten as a one-module import would be; the others stay."""
    out = []
    for item in (i.strip() for i in items.split(",")):
        name, _, alias = (p.strip() for p in item.partition(" as "))
        if name == "torch" or name.startswith("torch."):
            sub = name[len("torch"):]
            if alias:
                item = f"shardflow{sub} as {alias}"
            elif sub:  # import torch.nn binds torch; load shardflow.nn too
                item = f"shardflow as torch; __import__('shardflow{sub}')"
                out.append(item)
                continue
            else:
                item = "shardflow as torch"
        out.append(item)
    if any(";" in i for i in out):  # a bare torch.x: split into statements
        return "; import ".join(out)
    return ", ".join(out)


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
    if use_shardflow:
        refuse_torch_names(module)
    return module


def refuse_torch_names(module: types.ModuleType) -> None:
    """A rewritten program that still reaches PyTorch (an import form the rules above do not
    know, or a package such as torchvision that imports torch) would run on torch and pass
    a parity test vacuously: refuse it, naming the global."""
    for name, value in vars(module).items():
        if isinstance(value, types.ModuleType):
            origin = value.__name__
        else:
            origin = getattr(value, "__module__", None)
            if not isinstance(origin, str):
                continue
        if origin in ("torch", "functorch") or origin.startswith(("torch.", "functorch.", "torchvision", "torchaudio")):
            raise ImportError(
                f"{module.__file__}: after rewriting its imports to shardflow, the global "
                f"{name!r} still comes from {origin!r}; add a rule for that import form to "
                "shardflow.testing.parity or drop the import from the program")
