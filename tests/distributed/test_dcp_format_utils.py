"""torch.distributed.checkpoint.format_utils in one process, against torch 2.13:
dcp_to_torch_save writes a file torch.load reads (nested state, 0-d ``step`` kept 0-d),
torch_save_to_dcp takes a file torch.save wrote, both refuse what torch refuses (a file for the checkpoint folder: CheckpointException); and
get_state_dict names an FSDP1 model's optimizer state by PyTorch's FQNs (``net1.weight``,
not ``_fsdp_wrapped_module.net1.weight``), the model state dict's keys."""

import numpy as np
import pytest

import shardflow as sf
import shardflow.distributed.checkpoint as dcp
from shardflow.distributed.checkpoint.format_utils import dcp_to_torch_save, torch_save_to_dcp

torch = pytest.importorskip("torch")
import torch.distributed.checkpoint as tdcp  # noqa: E402
from torch.distributed.checkpoint import format_utils as tfu  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled", "ignore:`save_state_dict` is deprecated")


def _state():
    sf.manual_seed(0)
    lin = sf.nn.Linear(4, 3)
    opt = sf.optim.Adam(lin.parameters(), lr=0.1)
    lin(sf.randn(2, 4)).sum().backward()
    opt.step()
    msd, osd = dcp.get_state_dict(lin, opt)
    return {"epoch": 3, "app": {"model": msd, "optim": osd}}  # not in sorted order


def test_dcp_to_torch_save_is_read_by_torch_load(tmp_path):
    state = _state()
    dcp.save(state, checkpoint_id=str(tmp_path / "ckpt"))
    dcp_to_torch_save(tmp_path / "ckpt", tmp_path / "out.pth")
    th = torch.load(tmp_path / "out.pth", weights_only=True)
    # the saved order (the index's maps are sorted; its "order" keeps the state dict's)
    assert list(th) == ["epoch", "app"] and list(th["app"]) == ["model", "optim"]
    assert list(th["app"]["model"]) == ["weight", "bias"] == list(th["app"]["optim"]["state"])
    assert list(th["app"]["optim"]) == ["state", "param_groups"]
    assert th["epoch"] == 3
    for k, v in state["app"]["model"].items():
        np.testing.assert_array_equal(th["app"]["model"][k].numpy(), v.numpy())
    step = th["app"]["optim"]["state"]["weight"]["step"]
    assert step.shape == torch.Size([]) and step.item() == 1.0
    assert th["app"]["optim"]["param_groups"][0]["params"] == ["weight", "bias"]
    np.testing.assert_array_equal(th["app"]["optim"]["state"]["bias"]["exp_avg"].numpy(),
                                  state["app"]["optim"]["state"]["bias"]["exp_avg"].numpy())


def test_torch_save_to_dcp_takes_torch_files(tmp_path):
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    torch.save({"model": lin.state_dict()}, tmp_path / "m.pt")
    torch_save_to_dcp(tmp_path / "m.pt", tmp_path / "ckpt")
    target = sf.nn.Linear(4, 3)
    sd = {"model": target.state_dict()}
    dcp.load(sd, checkpoint_id=str(tmp_path / "ckpt"))
    target.load_state_dict(sd["model"])
    for k, v in lin.state_dict().items():
        np.testing.assert_array_equal(target.state_dict()[k].numpy(), v.numpy())


def test_refusals_are_torchs(tmp_path):
    f = tmp_path / "m.pt"
    torch.save({"x": torch.ones(1)}, f)
    with pytest.raises(tdcp.CheckpointException):
        tfu.dcp_to_torch_save(f, tmp_path / "o.pth")
    with pytest.raises(dcp.CheckpointException, match="expected a DCP checkpoint folder.*is a file"):
        dcp_to_torch_save(f, tmp_path / "o.pth")
    with pytest.raises(dcp.CheckpointException, match="is missing"):
        dcp_to_torch_save(tmp_path / "nowhere", tmp_path / "o.pth")
    from shardflow.distributed.checkpoint import format_utils

    with pytest.raises(NotImplementedError, match="BroadcastingTorchSaveReader.*torch_save_to_dcp"):
        format_utils.BroadcastingTorchSaveReader  # noqa: B018
    assert format_utils.__all__ == ["dcp_to_torch_save", "torch_save_to_dcp"]
    assert set(format_utils.__all__) < set(tfu.__all__)


def test_fsdp1_optimizer_state_is_keyed_by_the_models_names():
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP

    class Toy(sf.nn.Module):
        def __init__(self):
            super().__init__()
            self.net1 = sf.nn.Linear(4, 4)
            self.net2 = sf.nn.Linear(4, 2)

        def forward(self, x):
            return self.net2(self.net1(x).relu())

    model = FSDP(Toy())
    opt = sf.optim.Adam(model.parameters(), lr=0.1)
    model(sf.randn(3, 4)).sum().backward()
    opt.step()
    msd, osd = dcp.get_state_dict(model, opt)
    names = ["net1.weight", "net1.bias", "net2.weight", "net2.bias"]  # torch's, see docstring
    assert list(msd) == names
    assert list(osd["state"]) == names and osd["param_groups"][0]["params"] == names
    before = {k: v.numpy().copy() for k, v in msd.items()}
    dcp.set_state_dict(model, opt, model_state_dict=msd, optim_state_dict=osd)
    for k, v in dcp.get_state_dict(model, opt)[0].items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def _notes(fn) -> list:
    import warnings

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in got if "torch.distributed is disabled" in str(w.message)]


def test_one_process_note_is_torchs(tmp_path):
    """dcp.save / dcp.load / async_save in one process (no process group, or no_dist=True)
    warn as torch does; format_utils and the deprecated save_state_dict do not."""
    for lib, root in ((sf, dcp), (torch, tdcp)):
        sd = {"a": lib.ones(2)}
        d = tmp_path / lib.__name__
        saved = _notes(lambda: root.save(sd, checkpoint_id=str(d / "1")))
        assert saved == ["torch.distributed is disabled, unavailable or uninitialized, assuming the "
                         "intent is to save in a single process."], (lib, saved)
        loaded = _notes(lambda: root.load(sd, checkpoint_id=str(d / "1")))
        assert loaded == [saved[0].replace("to save", "to load")], (lib, loaded)
        assert len(_notes(lambda: root.save(sd, checkpoint_id=str(d / "2"), no_dist=True))) == 1
        assert len(_notes(lambda: root.async_save(sd, checkpoint_id=str(d / "3")).result())) == 1
        assert _notes(lambda: root.save_state_dict(sd, root.FileSystemWriter(str(d / "4")), no_dist=True)) == []
    assert _notes(lambda: dcp_to_torch_save(tmp_path / "shardflow" / "1", tmp_path / "x.pth")) == []
    assert _notes(lambda: torch_save_to_dcp(tmp_path / "x.pth", tmp_path / "y")) == []
