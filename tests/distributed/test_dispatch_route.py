"""One route for every op: each function ``shardflow.ops`` exports is the routed wrapper that
``autograd.dispatch.register`` returns, so ``shardflow.X``, ``Tensor.X`` and
``nn.functional`` all pass the global-tensor handler (one process is a placement of one)."""

import importlib
import pkgutil

import numpy as np

import shardflow as sf
import shardflow.nn.functional as F
import shardflow.ops as ops
from shardflow.autograd import dispatch
from shardflow.autograd.dispatch import OPS
from shardflow.distributed import placement, sbp

# Creation from data, and shapes in -> shape out: no tensor argument to dispatch on.
NOT_ROUTED = {"tensor", "as_tensor", "from_numpy", "broadcast_shapes",
              # creation with no tensor argument that torch spells only at the top level, and the
              # exchange with other libraries' buffers (DLPack, the buffer protocol)
              "range", "empty_permuted", "frombuffer", "from_dlpack", "to_dlpack",
              # a storage read from a file; a removed function that only raises torch's message
              "from_file", "matrix_rank"}


# torch's top-level name is the aten form of the op (an integer ``reduction`` code:
# nn/aten_losses.py), which calls the routed ``nn.functional`` one
ATEN_TOP_LEVEL = {"ctc_loss"}


def _exported():
    for m in pkgutil.iter_modules(ops.__path__):
        if m.name.startswith("_") or m.name == "blocked":
            continue
        mod = importlib.import_module(f"shardflow.ops.{m.name}")
        for name in getattr(mod, "__all__", []):
            f = getattr(mod, name)
            if callable(f) and not isinstance(f, type):
                yield f"{m.name}.{name}", name, f


def test_every_exported_op_is_routed():
    missing = [q for q, name, f in _exported() if name not in NOT_ROUTED and not hasattr(f, "op_name")]
    assert not missing, f"exported ops that bypass the dispatch route: {missing}"


def test_top_level_functional_and_table_are_the_same_routed_function():
    """The table holds the plain function while no hook is installed and the routed one while
    one is (dispatch's docstring): either way it is this op's."""
    routed = dispatch._ROUTED
    for q, name, f in _exported():
        if name in NOT_ROUTED:
            continue
        key = f.op_name if routed.get(f.op_name) is f else name
        assert routed[key] is f, q
        assert OPS[key] in (f, f.__wrapped__), q
        top = getattr(sf, name, None)
        if name in ATEN_TOP_LEVEL:  # torch.X is aten's form, which calls this routed op
            assert top.__module__ == "shardflow.nn.aten_losses", q
            continue
        assert top is None or top is f, q
    p = placement("cpu")  # a hook is installed: the table holds the routed forms
    del p
    assert all(OPS[k] is v for k, v in routed.items())


def test_global_tensor_passes_every_entry_point():
    p = placement("cpu")
    x = sf.randn(4, 3, placement=p, sbp=sbp.split(0))
    for out in (sf.floor(x), x.floor(), F.relu(x), sf.eq(x, x), F.dropout2d(x.unsqueeze(0), 0.0)):
        assert out.is_global, out
    np.testing.assert_array_equal(sf.floor(x).numpy(), np.floor(x.numpy()))
