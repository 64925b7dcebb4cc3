"""torchvision's model definitions (``torchvision/models/*.py``) as users copy them, with the
few ``torchvision`` helpers they import (``ops/misc.py``, ``ops/stochastic_depth.py``,
``models/_utils.py``, ``utils.py``); torchvision itself is not installed. Each file's header
says where it comes from and what was removed (only the weight-download and registration
machinery).

The files keep torchvision's relative imports (``from ..ops.misc import
Conv2dNormActivation``), so :func:`load` executes them as a package of their own, once per
framework: ``tv_torch`` (as written) and ``tv_shardflow`` (imports rewritten to shardflow),
each registered in ``sys.modules`` under that name so the relative imports resolve.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

from shardflow.testing.parity import refuse_torch_names, rewrite_imports

HERE = Path(__file__).parent

# dependency order: the helpers first
FILES = ("utils", "ops.misc", "ops.stochastic_depth", "models._utils", "models.resnet",
         "models.mobilenetv2", "models.mobilenetv3", "models.convnext",
         "models.shufflenetv2", "models.swin_transformer", "models.efficientnet",
         "models.vision_transformer", "models.densenet", "models.squeezenet",
         "models.googlenet", "models.mnasnet")


def load(use_shardflow: bool) -> types.ModuleType:
    """The package (``tv_shardflow`` or ``tv_torch``) with ``.models.<file>`` and ``.ops``
    loaded from this folder; built once per process."""
    root = "tv_shardflow" if use_shardflow else "tv_torch"
    if root in sys.modules:
        return sys.modules[root]
    package = types.ModuleType(root)
    package.__path__ = []
    for sub in ("ops", "models"):
        module = types.ModuleType(f"{root}.{sub}")
        module.__path__ = []
        setattr(package, sub, module)
        sys.modules[module.__name__] = module
    for name in FILES:
        path = HERE / (name.replace(".", "/") + ".py")
        source = path.read_text()
        if use_shardflow:
            source = rewrite_imports(source)
        full = f"{root}.{name}"
        module = types.ModuleType(full)
        module.__file__ = str(path)
        module.__package__ = full.rpartition(".")[0]
        sys.modules[full] = module
        exec(compile(source, str(path), "exec"), module.__dict__)
        if use_shardflow:
            refuse_torch_names(module)
        parent = package if "." not in name else getattr(package, name.split(".")[0])
        setattr(parent, name.rpartition(".")[2], module)
    sys.modules[root] = package
    return package
