"""``save`` / ``load`` give tensors back as ``torch.save`` / ``torch.load`` do: a tensor that
requires grad requires it again (a non-leaf one comes back a leaf), a Parameter stays a
Parameter with its ``requires_grad``, a state dict's detached tensors stay plain. Checked on
shardflow's own format, on the pickle format it writes for a whole module, and on files
torch wrote. (Found by the makemore lectures' idiom of saving the ``parameters`` list.)"""

import io

import pytest
import torch

import shardflow as sf


def _objects(lib):
    w = lib.ones(2, requires_grad=True)
    lin = lib.nn.Linear(2, 2)
    return [w, w * 2, lib.nn.Parameter(lib.ones(1), requires_grad=False), lin.weight, lib.arange(3),
            lin.state_dict()["weight"], {"nested": (w,)}, lib.ones(2, dtype=lib.float64, requires_grad=True)[:1]]


def _summary(objs):
    flat = objs[:6] + [objs[6]["nested"][0], objs[7]]
    return [(type(t).__name__, t.requires_grad, t.is_leaf, t.grad_fn is None, str(t.dtype).split(".")[-1]) for t in flat]


def _roundtrip(lib, obj, **load_kw):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_kw)


def test_save_load_keeps_requires_grad_and_parameters_as_torch():
    assert _summary(_roundtrip(sf, _objects(sf))) == _summary(_roundtrip(torch, _objects(torch)))
    got = _summary(_roundtrip(sf, _objects(sf)))
    assert got[0][:2] == ("Tensor", True) and got[1][:3] == ("Tensor", True, True)
    assert got[2][:2] == ("Parameter", False) and got[3][:2] == ("Parameter", True)


class Holder(sf.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = sf.nn.Linear(2, 2)
        self.cache = sf.ones(2, requires_grad=True) * 3  # a non-leaf attribute: torch saves it


def test_whole_module_pickle_and_non_leaf_as_torch():
    back = _roundtrip(sf, Holder(), weights_only=False)
    assert type(back.lin.weight).__name__ == "Parameter" and back.lin.weight.requires_grad
    assert back.cache.requires_grad and back.cache.is_leaf and back.cache.tolist() == [3.0, 3.0]


def test_files_torch_wrote_keep_requires_grad(tmp_path):
    w = torch.ones(2, requires_grad=True)
    path = tmp_path / "t.pt"
    torch.save({"a": w, "b": w * 3, "p": torch.nn.Parameter(torch.ones(2)), "q": torch.nn.Parameter(
        torch.ones(1), requires_grad=False), "i": torch.arange(2)}, path)
    th = torch.load(path)
    sf_back = sf.load(path)
    for k, v in th.items():
        assert (type(sf_back[k]).__name__, sf_back[k].requires_grad) == (type(v).__name__, v.requires_grad), k


@pytest.mark.parametrize("lib", [torch, sf], ids=["torch", "shardflow"])
def test_loaded_tensor_trains(lib):
    """The loaded list is usable as the lecture uses it: gradients flow into its leaves."""
    params = _roundtrip(lib, [lib.ones(2, 2, requires_grad=True), lib.zeros(2, requires_grad=True)])
    (lib.ones(1, 2) @ params[0] + params[1]).sum().backward()
    assert params[0].grad.tolist() == [[1.0, 1.0], [1.0, 1.0]] and params[1].grad.tolist() == [1.0, 1.0]
