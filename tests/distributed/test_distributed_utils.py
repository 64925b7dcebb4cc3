"""``torch.distributed.utils``: the private helpers programs copy from torch's FSDP/DDP code,
against torch 2.13 (single process), and ``_sync_module_states`` on two real ranks."""

import collections
import dataclasses

import numpy as np
import pytest
import torch
import torch.distributed.utils as tu

import shardflow as sf
import shardflow.distributed.utils as su
from shardflow.testing.mpi import run_program


def test_sync_module_states_makes_ranks_equal_to_src():
    run_program("tests.distributed.programs.sync_module_states", n=2).check()


@dataclasses.dataclass
class _Batch:
    x: object
    n: int


def _nested(lib):
    Pair = collections.namedtuple("Pair", "a b")
    return {"l": [lib.ones(2), 3], "t": (lib.zeros(1),), "od": collections.OrderedDict(k=lib.ones(1)),
            "nt": Pair(lib.ones(1), "s"), "dc": _Batch(lib.ones(2), 4), "s": {5}}


def _plain(x):
    """Nested containers as comparable plain values: container type names, tensor values."""
    if isinstance(x, sf.Tensor | torch.Tensor):
        return ("tensor", x.tolist())
    if dataclasses.is_dataclass(x):
        return (type(x).__name__, [_plain(getattr(x, f.name)) for f in dataclasses.fields(x)])
    if isinstance(x, dict):
        return (type(x).__name__, [(k, _plain(v)) for k, v in x.items()])
    if isinstance(x, list | tuple | set):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


def test_apply_to_tensors_and_cast_forward_inputs_as_torch():
    mine = su._apply_to_tensors(lambda t: t * 2, _nested(sf))
    theirs = tu._apply_to_tensors(lambda t: t * 2, _nested(torch))
    assert _plain(mine) == _plain(theirs)
    assert mine["dc"].x.tolist() == [2.0, 2.0] and type(mine["od"]) is collections.OrderedDict
    a, k = su._cast_forward_inputs(sf.float64, sf.ones(2), sf.ones(2, dtype=sf.int64), y=[sf.ones(1)])
    ta, tk = tu._cast_forward_inputs(torch.float64, torch.ones(2), torch.ones(2, dtype=torch.int64), y=[torch.ones(1)])
    assert [str(t.dtype).split(".")[1] for t in a] == [str(t.dtype).split(".")[1] for t in ta] == ["float64", "int64"]
    assert str(k["y"][0].dtype) == "shardflow.float64" and tk["y"][0].dtype == torch.float64
    assert su._cast_forward_inputs(None, 1, x=2) == ((1,), {"x": 2})


def test_pack_unpack_kwargs_replace_prefix_root_modules_as_torch():
    assert su._pack_kwargs(1, 2, a=3, b=4) == tu._pack_kwargs(1, 2, a=3, b=4) == ((1, 2, 3, 4), ("a", "b"))
    assert su._unpack_kwargs((1, 2, 3, 4), ("a", "b")) == tu._unpack_kwargs((1, 2, 3, 4), ("a", "b"))
    assert su._unpack_kwargs((1,), ()) == ((1,), {})
    for lib in (su, tu):
        with pytest.raises(AssertionError, match="too many keys 2 vs. 1"):
            lib._unpack_kwargs((1,), ("a", "b"))
    sd, tsd = {"layer.w": 1, "other": 2, "layer.b": 3}, {"layer.w": 1, "other": 2, "layer.b": 3}
    su._replace_by_prefix(sd, "layer.", "module.layer.")
    tu._replace_by_prefix(tsd, "layer.", "module.layer.")
    assert sd == tsd and list(sd) == list(tsd)
    with pytest.raises(ValueError, match="must be distinct"):
        su._replace_by_prefix(sd, "a", "a")
    outer = sf.nn.Sequential(sf.nn.Linear(1, 1), sf.nn.Sequential(sf.nn.ReLU()))
    other = sf.nn.Linear(1, 1)
    roots = su._get_root_modules([outer[1], outer, other, outer[1][0]])
    assert roots == [outer, other]


def test_p_assert_prints_then_raises(capsys):
    su._p_assert(True, "fine")
    su._p_assert(False, "not raised", raise_assertion_error=False)
    with pytest.raises(AssertionError, match="bad state"):
        su._p_assert(False, "bad state")
    assert capsys.readouterr().out == "not raised\nbad state\n"


def test_to_kwargs_moves_to_one_device_as_torch():
    cpu = sf.device("cpu")
    inputs, kwargs = su._to_kwargs((sf.ones(2), 3), {"m": sf.zeros(1)}, cpu, False)
    t_inputs, t_kwargs = tu._to_kwargs((torch.ones(2), 3), {"m": torch.zeros(1)}, torch.device("cpu"), False)
    assert len(inputs) == len(t_inputs) == 1 and len(kwargs) == len(t_kwargs) == 1
    assert inputs[0][1] == t_inputs[0][1] == 3 and np.array_equal(inputs[0][0].numpy(), t_inputs[0][0].numpy())
    assert list(kwargs[0]) == list(t_kwargs[0]) == ["m"]
    assert su._to_kwargs((), {"m": 1}, cpu, False) == (((),), ({"m": 1},))
    assert tu._to_kwargs((), {"m": 1}, torch.device("cpu"), False) == (((),), ({"m": 1},))
