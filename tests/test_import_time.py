"""``import shardflow`` stays cheap (every MPI rank pays it): the subpackages a training script
rarely needs load on first use (PEP 562 ``__getattr__`` in ``shardflow/__init__.py``), and
loading them later changes nothing a plain ``import shardflow`` gave (ops, Tensor methods).
Each check runs in a fresh interpreter, whose ``sys.modules`` starts empty."""

import json
import os
import subprocess
import sys

import shardflow as sf

# What `import shardflow` must not import (the root's lazy subpackages, DDP's machinery,
# nn.utils' rarely used submodules, and the stdlib modules only some calls need).
LAZY_SUBPACKAGES = ["ao", "checkpoint", "comm", "compiler", "cpu", "cuda", "data", "distributed",
                    "distributions", "export", "func", "fx", "hub", "jit", "mps", "multiprocessing", "onnx", "optim",
                    "overrides", "profiler", "quant", "quasirandom", "serialization", "signal",
                    "testing", "utils", "classes", "nested"]
LAZY_MODULES = ["shardflow.autograd.profiler", "shardflow.autograd.functional",
                "shardflow.amp.grad_scaler", "shardflow.nn.parallel.distributed",
                "shardflow.nn.parallel.reducer", "shardflow.nn.utils.prune",
                "shardflow.nn.utils.parametrize", "shardflow.nn.utils.stateless",
                "shardflow.nn.common_types", "shardflow.nn.grad", "shardflow.backends.mkldnn",
                "shardflow.backends.mkl", "shardflow.backends.openmp", "shardflow.backends.cpu",
                "shardflow.backends.quantized", "shardflow.backends.opt_einsum", "shardflow.backends.nnpack",
                "shardflow.backends.mha",
                "multiprocessing", "subprocess", "socket", "secrets"]
# top-level name -> where it lives
LAZY_NAMES = {"vmap": "shardflow.func", "compile": "shardflow.jit", "compile_step": "shardflow.jit",
              "dequantize": "shardflow.quant", "qint8": "shardflow.quant", "qint32": "shardflow.quant",
              "quint8": "shardflow.quant", "quantize_per_tensor": "shardflow.quant",
              "quantize_per_channel": "shardflow.quant", "placement": "shardflow.distributed.placement",
              "parallelize": "shardflow.distributed.parallel_config", "load": "shardflow.serialization",
              "save": "shardflow.serialization", "OutOfMemoryError": "shardflow.cuda",
              "GradScaler": "shardflow.amp", "fork": "shardflow.jit", "wait": "shardflow.jit",
              "Tag": "shardflow.library.tags"}


def _fresh(code: str):
    """Run ``code`` in a new interpreter importing this checkout; return what it printed as JSON."""
    root = os.path.dirname(os.path.dirname(sf.__file__))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env, cwd=root, timeout=120).stdout
    return json.loads(out.splitlines()[-1])


def test_import_shardflow_leaves_the_lazy_modules_unimported():
    loaded = _fresh("import json, sys, shardflow; print(json.dumps(sorted(sys.modules)))")
    wanted_absent = [f"shardflow.{n}" for n in LAZY_SUBPACKAGES] + LAZY_MODULES
    assert [m for m in wanted_absent if m in loaded] == []
    assert "shardflow.nn" in loaded and "shardflow.ops" in loaded  # the check sees real imports


def test_lazy_names_are_listed_and_resolve_to_the_eager_objects():
    code = ("import importlib, json, shardflow as sf\n"
            f"subs, names = {LAZY_SUBPACKAGES!r}, {LAZY_NAMES!r}\n"
            "listed = [n for n in subs + list(names) if n in dir(sf)]\n"
            "mods = [getattr(sf, n).__name__ for n in subs]\n"
            "same = [getattr(sf, n) is getattr(importlib.import_module(m), n) for n, m in names.items()]\n"
            "print(json.dumps([listed, mods, same, sf.sbp.__name__]))")
    listed, mods, same, sbp = _fresh(code)
    assert listed == LAZY_SUBPACKAGES + list(LAZY_NAMES)
    assert mods == [f"shardflow.{n}" for n in LAZY_SUBPACKAGES]
    assert all(same) and sbp == "shardflow.distributed.sbp"


def test_import_forms_of_lazy_subpackages_work():
    code = ("import json\n"
            "from shardflow import distributions, hub\n"
            "import shardflow.onnx\n"
            "import shardflow as sf\n"
            "from shardflow.nn.parallel import DistributedDataParallel, DDP\n"
            "print(json.dumps([distributions is sf.distributions, hub.__name__, sf.onnx.__name__,\n"
            "                  DDP is DistributedDataParallel is sf.nn.parallel.DDP,\n"
            "                  sf.nn.utils.prune.__name__, sf.autograd.profiler.__name__,\n"
            "                  sf.autograd.functional.__name__, sf.amp.grad_scaler.__name__,\n"
            "                  'profiler' in dir(sf.autograd), 'DDP' in dir(sf.nn.parallel),\n"
            "                  'prune' in dir(sf.nn.utils), 'GradScaler' in dir(sf.amp)]))")
    assert _fresh(code) == [True, "shardflow.hub", "shardflow.onnx", True, "shardflow.nn.utils.prune",
                            "shardflow.autograd.profiler", "shardflow.autograd.functional",
                            "shardflow.amp.grad_scaler", True, True, True, True]


def test_loading_the_lazy_subpackages_registers_no_op_or_tensor_method():
    """The op registry is complete after ``import shardflow``: a subpackage whose import
    registered ops (``special`` does) cannot be lazy."""
    code = ("import json, shardflow as sf\n"
            "def snap(): return [sorted(sf.autograd.dispatch.OPS), sorted(dir(sf.Tensor))]\n"
            "before = snap()\n"
            f"for n in {LAZY_SUBPACKAGES!r}: getattr(sf, n)\n"
            "import shardflow.nn.parallel.distributed, shardflow.nn.utils.prune\n"
            "import shardflow.autograd.functional, shardflow.amp.grad_scaler\n"
            "print(json.dumps([before == snap(), len(before[0])]))")
    unchanged, n_ops = _fresh(code)
    assert unchanged and n_ops > 500


def test_an_unknown_attribute_still_raises_attribute_error():
    for module in (sf, sf.autograd, sf.amp, sf.nn.parallel, sf.nn.utils):
        try:
            module.no_such_name
        except AttributeError as e:
            assert module.__name__ in str(e) and "no_such_name" in str(e)
        else:
            raise AssertionError(f"{module.__name__}.no_such_name resolved")
