"""The import rewriting the public-program tests rely on (``shardflow.testing.parity``):
every import form a program uses must land on shardflow, and a program that would still
reach PyTorch after the rewrite is refused rather than run on torch (which would pass a
parity test vacuously)."""

import pytest

from shardflow.testing.parity import load_torch_file, rewrite_imports


def test_import_forms_land_on_shardflow(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(
        "import torch  # noqa: F401 (a comment)\n"
        "import torch.utils.data\n"
        "import torch.nn as nn  # the layers\n"
        "import torch.distributed as dist\n"
        "from torch import optim\n"
        "from torch.nn import functional as F\n"
        "def f():\n"
        "    import torch.multiprocessing\n"
        "    return torch\n")
    prog = load_torch_file(path, use_shardflow=True)
    for name in ("torch", "nn", "dist", "optim", "F"):
        assert getattr(prog, name).__name__.startswith("shardflow"), name
    assert prog.torch.utils.data.DataLoader.__module__.startswith("shardflow.")
    assert prog.f().__name__ == "shardflow"


def test_comments_are_kept_and_torch_prefixed_names_left_alone():
    assert rewrite_imports("import torch  # why\nimport torchvision\nimport torch.nn as nn # x\n") == (
        "import shardflow as torch  # why\nimport torchvision\nimport shardflow.nn as nn # x\n")


def test_bare_submodule_import_keeps_the_name_torch():
    assert rewrite_imports("import torch.utils.data\n") == (
        'import shardflow as torch; __import__("shardflow.utils.data")\n')


def test_a_program_still_reaching_torch_is_refused(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text("import torch\nimport importlib\nreal = importlib.import_module('torch')\n")
    with pytest.raises(ImportError, match="'real' still comes from 'torch'"):
        load_torch_file(path, use_shardflow=True)
    load_torch_file(path, use_shardflow=False)  # the torch run is what it is


def test_comma_separated_imports_naming_torch_land_on_shardflow(tmp_path):
    """``import torch, numpy as np`` was left as it was: the program ran on PyTorch, and a
    parity test of it compared torch with torch."""
    path = tmp_path / "prog.py"
    path.write_text("import torch, numpy as np\n"
                    "import os, torch.nn as nn  # layers\n"
                    "import torch.nn.functional as F, sys\n"
                    "import torch.utils.data, math\n")
    prog = load_torch_file(path, use_shardflow=True)
    for name in ("torch", "nn", "F"):
        assert getattr(prog, name).__name__.startswith("shardflow"), name
    assert prog.np.__name__ == "numpy" and prog.os.__name__ == "os" and prog.math.__name__ == "math"
    assert prog.torch.utils.data.DataLoader.__module__.startswith("shardflow.")
    assert rewrite_imports("import os, sys\n") == "import os, sys\n"
