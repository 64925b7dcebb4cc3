"""Classic CIFAR image-classification training code, run as scripts on torch and, with
their imports rewritten, on shardflow, from the same ``manual_seed`` (no weight copying, no
shared draws: shardflow draws torch's numbers, docs/COMPAT.md "Random seeds"), compared on
every printed line and the trained and saved states (docs/COMPAT.md, "Public programs").

* ``programs/cifar_zoo/``: kuangliu/pytorch-cifar's ``main.py`` loop with fifteen of its
  models at widths of a few channels (VGG, PreActResNet, GoogLeNet, DenseNet, MobileNet,
  MobileNetV2, ShuffleNet, SENet, DPN, ResNeXt, SimpleDLA, RegNet, EfficientNet with drop
  connect and dropout in training mode, PNASNet A and B), each wrapped in
  ``nn.DataParallel`` (its repr, ``module.`` keys), 2 epochs of 2 batches of 2 images,
  then ``--resume`` from the checkpoint the run saved.
* ``programs/cifar_tricks.py``: mixup, cutout, hand-written label smoothing, top-k
  accuracy with ``AverageMeter``, no-decay parameter groups, OneCycleLR / MultiStepLR and
  two EMA styles saved with ``torch.save``.

Tolerance: printed losses have 5 (zoo) or 6 (label smoothing) decimals; they agree to the
last printed digit +-1 (float32 rounding in a different summation order, grown over 4
SGD steps: measured 1e-5 at most). Trained weights: rtol 1e-4, atol 1e-5 (measured: 1.4e-6
at most) except MobileNet and SimpleDLA, held to atol 3e-4 (measured 1.9e-5 and 1.3e-6 on
these draws; 1.0e-4 and 9e-5 when the initial weights were drawn one shuffle earlier). On
these data those two nets are chaotic in torch itself: torch float32 with its initial
weights scaled by (1 + 1e-7) ends the same 4 steps up to 4e-2 away, and torch float32 is
6e-4 (MobileNet) from float64 after 6 steps. Per step, with torch's weights given to both,
shardflow's gradients are within 4x torch's own float32 error of float64 (at most 2e-6),
so the spread is rounding amplified, not a different computation.
"""

import re
import warnings

import numpy as np
import pytest
import torch

import shardflow

from .programs._harness import HERE, assert_close, assert_same_state, load_file, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

ZOO = HERE / "cifar_zoo"
NETS = ["VGG", "PreActResNet18", "GoogLeNet", "DenseNet", "MobileNet", "MobileNetV2", "ShuffleNet", "SENet18",
        "DPN26", "ResNeXt", "SimpleDLA", "RegNetY", "EfficientNet", "PNASNetA", "PNASNetB"]
WEIGHT_ATOL = {"MobileNet": 3e-4, "SimpleDLA": 3e-4}  # measured: see the module docstring
_TIMES = re.compile(r"Step: \S+ \| Tot: \S+")  # measured times in the progress bar


def _zoo_run(tmp_path, monkeypatch, capsys, lib, use_sf, net, argv=()):
    where = tmp_path / ("sf" if use_sf else "th") / net
    where.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(where)
    side = "sf" if use_sf else "th"
    modules = {name: load_file(ZOO / f"{name}.py", use_sf, f"cifar_zoo_{name}_{side}") for name in ("models", "utils")}
    lib.manual_seed(0)
    script = run_script(ZOO / "main.py", use_sf, ["--net", net, "--lr", "0.02", *argv], modules=modules)
    lines = [_TIMES.sub("Step: <t> | Tot: <t>", line) for line in capsys.readouterr().out.splitlines()]
    return script, lines, where


# three tests of five nets (each test under 8 s); DenseNet's group also resumes
GROUPS = [NETS[0:5], NETS[5:10], NETS[10:15]]


@pytest.mark.parametrize("nets", GROUPS, ids=["vgg_to_mobilenet", "mobilenetv2_to_resnext", "dla_to_pnasnet"])
def test_pytorch_cifar_model_zoo_trains_like_torch(tmp_path, monkeypatch, capsys, nets):
    """Each net: ``get_mean_and_std`` of the training set (a shuffled loader, in-place
    ``mean[i] +=`` of per-channel statistics), ``print(net)`` of the DataParallel wrapper, the parameter count, every
    progress-bar line (train loss and accuracy per batch, test loss and accuracy), "Saving.."
    where the test accuracy improved, the cosine lr after each epoch, and the trained state
    (``module.`` keys); the checkpoint each side saved, then a ``--resume`` run (DenseNet:
    ``torch.load`` of its own checkpoint into the wrapper, one more epoch)."""
    saved = 0
    for net in nets:
        (th, th_out, th_dir), (sf, sf_out, sf_dir) = (
            _zoo_run(tmp_path, monkeypatch, capsys, lib, use_sf, net) for use_sf, lib in ((False, torch), (True, shardflow)))
        assert th_out[1] == "==> Computing mean and std.." and th_out[2].startswith("mean, std: tensor(["), th_out[:3]
        assert th_out[4] == "DataParallel(" and sum(line.startswith(" [") for line in th_out) == 6, (net, th_out[:5])
        same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-5, what=net)
        assert list(sf.net.state_dict())[0].startswith("module.")
        assert_same_state(sf.net, th.net, net, rtol=1e-4, atol=WEIGHT_ATOL.get(net, 1e-5))
        assert sf.best_acc == th.best_acc
        if (th_dir / "checkpoint" / "ckpt.pth").exists():
            saved += 1
            th_ck = torch.load(th_dir / "checkpoint" / "ckpt.pth")
            sf_ck = shardflow.load(sf_dir / "checkpoint" / "ckpt.pth")
            assert (sf_ck["acc"], sf_ck["epoch"]) == (th_ck["acc"], th_ck["epoch"]), net
            assert list(sf_ck["net"]) == list(th_ck["net"]), net
            for k, v in th_ck["net"].items():
                assert_close(sf_ck["net"][k].numpy(), v.numpy(), f"{net} saved {k}", rtol=1e-4,
                             atol=WEIGHT_ATOL.get(net, 1e-5))
        else:
            assert not (sf_dir / "checkpoint").exists(), net
    if "DenseNet" not in nets:
        return
    assert saved >= 3  # VGG, GoogLeNet, DenseNet, MobileNet save on these data
    (th, th_out, _), (sf, sf_out, _) = (
        _zoo_run(tmp_path, monkeypatch, capsys, lib, use_sf, "DenseNet", ["--resume", "--epochs", "1"])
        for use_sf, lib in ((False, torch), (True, shardflow)))
    assert any(line.startswith("resumed at epoch") and "'module.conv1.weight'" in line for line in th_out)
    same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-5, what="DenseNet --resume")
    assert_same_state(sf.net, th.net, "DenseNet resumed", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("argv", [[], ["--sched", "multistep", "--epochs", "3"], ["--sched", "warmup", "--epochs", "3"]],
                         ids=["onecycle", "multistep", "warmup"])
def test_cifar_training_tricks_like_torch(tmp_path, monkeypatch, capsys, argv):
    """cifar_tricks.py as a script: per batch, mixup's ``lam`` (NumPy's beta draw) with
    ``torch.randperm``'s pairing, cutout masks, the ``AverageMeter`` line of the mixed
    label-smoothing loss, the two other smoothing losses (``scatter_`` form and
    ``CrossEntropyLoss(label_smoothing=0.1)``), the lr and momentum of OneCycleLR (per batch),
    MultiStepLR (per epoch) or a ``_LRScheduler`` warm-up per batch then MultiStepLR's
    ``step(epoch)`` (torch's deprecation warning, compared); per epoch, top-1/top-5 accuracy of the net and both EMAs
    (``AverageMeter`` of 1-element tensors in f-strings, tensor reprs); both EMAs'
    ``num_batches_tracked`` (the ``copy_`` of a float blend into int64 truncates it to 0);
    the net, both EMAs and the two saved checkpoints."""
    runs, warned = [], []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir()
        monkeypatch.chdir(where)
        lib.manual_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            script = run_script(HERE / "cifar_tricks.py", use_sf, argv)
        warned.append([(w.category, str(w.message)) for w in caught])
        runs.append(((script.net, script.ema, script.ema2), capsys.readouterr().out.splitlines(), where))
    assert warned[1] == warned[0]
    assert len(warned[0]) == (2 if "warmup" in argv else 0), warned[0]  # step(epoch), twice
    (th_models, th_out, th_dir), (sf_models, sf_out, sf_dir) = runs
    assert th_out[0] == "groups: [15, 8] [0.0, 0.0005]"
    assert th_out[-2] == f"num_batches_tracked tensor(0) tensor(0) tensor({2 * (3 if argv else 2)})"
    same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-6, what="cifar_tricks")
    (th_net, th_ema, th_ema2), (sf_net, sf_ema, sf_ema2) = th_models, sf_models
    assert_same_state(sf_net, th_net, "net", rtol=1e-4, atol=1e-5)
    assert_same_state(sf_ema.ema, th_ema.ema, "ModelEMA", rtol=1e-4, atol=1e-5)
    assert_same_state(sf_ema2, th_ema2, "ModelEmaV2", rtol=1e-4, atol=1e-5)
    th_saved = torch.load(th_dir / "checkpoint" / "ema.pth")
    sf_saved = shardflow.load(sf_dir / "checkpoint" / "ema.pth")
    assert sf_saved["updates"] == th_saved["updates"] == 2 * (3 if argv else 2)
    for k, v in th_saved["ema"].items():
        assert str(sf_saved["ema"][k].dtype).replace("shardflow", "torch") == str(v.dtype), k
        assert_close(sf_saved["ema"][k].numpy(), v.numpy(), f"saved ema {k}", rtol=1e-4, atol=1e-5)
    th2, sf2 = torch.load(th_dir / "checkpoint" / "ema2.pth"), shardflow.load(sf_dir / "checkpoint" / "ema2.pth")
    assert list(sf2) == list(th2) and list(th2)[0] == "module.conv1.weight"
    assert_close(np.array([int(sf2["module.bn1.num_batches_tracked"])]), np.array([0]), "truncated count")
