"""Public PyTorch programs, session 37 (programs-ah): research model code and RL, each run
as a script on torch and, with its imports rewritten, on shardflow, from the same
``manual_seed`` / ``np.random.seed`` (shardflow draws torch's numbers: docs/COMPAT.md "Random
seeds"; no weight copying, no shared draws), compared on every printed line, the warnings,
the files it writes and the trained states. See ``test_public_programs.py`` and
docs/COMPAT.md, "Public programs" and "Session 37 (programs-ah)".

Programs: sfujim/TD3 ``main.py`` (TD3, DDPG; ``programs/td3``), fxia22/pointnet.pytorch
(``programs/pointnet``), gram-ai/capsule-networks (``programs/capsnet``), a Grad-CAM on full backward hooks (``programs/gradcam``),
lukemelas/EfficientNet-PyTorch's core (``programs/efficientnet``). (Ports of
milesial/Pytorch-UNet (GPL-3.0) and meta-llama's ``model.py`` (Llama 2 licence) were written
and then left out: their licences do not allow copying them here.) The stand-ins for what they import besides torch (gym,
torchnet, visdom, wandb, data sets) are NumPy-only files beside them. Where a program is
chaotic in torch itself (measured by perturbing torch by one ulp or by its thread count), its
test compares the first steps closely and the rest loosely; each docstring says how far.
"""

import re
import sys
import warnings

import numpy as np
import pytest

from .programs._harness import HERE, assert_close, load_file, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")


def _siblings(folder, names, use_sf: bool) -> dict:
    """``{name: module}``: the program's sibling files ``folder/<name>.py`` loaded in order for
    one framework (each visible in ``sys.modules`` while the later ones load: ``import
    utils`` inside one of them), ``sys.modules`` left as it was."""
    saved = {name: sys.modules.get(name) for name in names}
    modules = {}
    try:
        for name in names:
            modules[name] = sys.modules[name] = load_file(
                folder / f"{name}.py", use_sf, f"{folder.name}_{name}_{'sf' if use_sf else 'th'}")
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return modules


def _run(tmp_path, monkeypatch, capsys, path, argv=(), siblings=(), modules=None, seed=0, tag=""):
    """Run ``programs/<path> ARGV`` as ``__main__`` in ``tmp_path/<th|sf><tag>`` on torch then
    shardflow, each after ``manual_seed(seed)`` and ``np.random.seed(seed)``, with its sibling
    files ``siblings`` (loaded per framework) and ``modules`` (framework-free stand-ins) in
    ``sys.modules``. Returns ``[(module, printed lines, warning messages, run directory),
    ...]``, torch's first."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / (("sf" if use_sf else "th") + tag)
        where.mkdir(parents=True, exist_ok=True)
        monkeypatch.chdir(where)
        lib.manual_seed(seed)
        np.random.seed(seed)
        own = {**(modules or {}), **_siblings((HERE / path).parent, siblings, use_sf)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = run_script(HERE / path, use_sf, argv=argv, modules=own)
        messages = [re.sub(r" \(Triggered internally at [^)]*\)$", "", f"{w.category.__name__}: {w.message}")
                    for w in caught]
        runs.append((module, capsys.readouterr().out.splitlines(), messages, where))
    return runs


def _same_saved(sf_file, th_file, what, rtol=1e-5, atol=1e-6):
    """A ``torch.save``d state dict (a model's or an optimizer's) read back by each framework
    from its own run's file: the same keys, structure and values (the arrays' values to
    ``rtol`` / ``atol``; with ``atol=None`` only their dtypes and shapes)."""
    import torch

    import shardflow

    def flat(obj, prefix=""):
        if isinstance(obj, dict):
            return {k: v for key, value in obj.items() for k, v in flat(value, f"{prefix}{key}/").items()}
        if isinstance(obj, list | tuple):
            return {k: v for i, value in enumerate(obj) for k, v in flat(value, f"{prefix}{i}/").items()}
        if hasattr(obj, "numpy"):
            return {prefix: np.asarray(obj.detach().numpy())}
        return {prefix: obj}

    th, sf = flat(torch.load(th_file)), flat(shardflow.load(sf_file))
    assert list(sf) == list(th), (what, list(sf), list(th))
    for key, value in th.items():
        if isinstance(value, np.ndarray):
            assert sf[key].dtype == value.dtype and sf[key].shape == value.shape, (what, key)
            if atol is not None:
                assert_close(sf[key], value, f"{what}: {key}", rtol, atol)
        else:
            assert sf[key] == value, (what, key, sf[key], value)


# sfujim/TD3 ---------------------------------------------------------------------------------

TD3_SIBLINGS = ("utils", "TD3", "OurDDPG", "DDPG")
TD3_ARGV = ["--env", "Pendulum-v0", "--start_timesteps", "40", "--eval_freq", "60", "--max_timesteps", "120",
            "--batch_size", "32", "--save_model"]


@pytest.mark.parametrize("policy", ["TD3", "DDPG"])
def test_sfujim_td3_main_like_torch(tmp_path, monkeypatch, capsys, policy):
    """sfujim/TD3's ``main.py`` as published (``programs/td3``: ``TD3.py``, ``DDPG.py``,
    ``OurDDPG.py``, ``utils.py`` beside it) on a gym 0.x Pendulum stand-in: 40 random
    steps, then 80 of TD3 (``copy.deepcopy`` targets, ``torch.randn_like`` policy noise
    ``clamp``-ed, ``torch.min`` of twin critics, delayed actor updates, Polyak averaging
    through ``target_param.data.copy_``) or of DDPG (critic Adam with ``weight_decay``, the
    target ``.detach()``-ed), three evaluations of 10 episodes (20 steps each) through ``select_action``'s
    ``.cpu().data.numpy().flatten()``; ``--save_model`` writes four ``torch.save`` files
    each evaluation. Then DDPG again with ``--load_model default``, loading them.

    Every printed line (episode and evaluation rewards, 3 decimals) agrees to rtol 1e-5, the
    ``results/*.npy`` evaluations to rtol 1e-5, and each saved state dict (models and Adam
    states, read back by the framework that wrote it) to rtol 1e-5, atol 1e-6 for TD3 and
    atol 3e-5 for DDPG: 0.06% of its actor's ``l2.weight`` entries were 1.4e-5 apart after 140 steps (weights
    whose gradients stay near Adam's eps, so rounding noise is stepped by up to lr 1e-4 each
    step; measured). OurDDPG is left out:
    its exploration feeds its own rounding back through the environment, and torch itself,
    with 30% of its initial weights moved by one ulp, changes its printed rewards in the
    third decimal after 60 training steps (measured), as shardflow does."""
    from .programs.td3 import tiny_pendulum

    argv = ["--policy", policy, *TD3_ARGV]
    runs = _run(tmp_path, monkeypatch, capsys, "td3/main.py", argv, TD3_SIBLINGS, {"gym": tiny_pendulum})
    (_, th_out, th_warned, th_dir), (_, sf_out, sf_warned, sf_dir) = runs
    assert sf_warned == th_warned
    assert sum(line.startswith("Evaluation over 10 episodes") for line in th_out) == 3
    assert sum(line.startswith("Total T:") for line in th_out) == 6
    same_printout(sf_out, th_out, what=policy)
    name = f"{policy}_Pendulum-v0_0"
    assert_close(np.load(sf_dir / f"results/{name}.npy"), np.load(th_dir / f"results/{name}.npy"), "results")
    for part in ("critic", "critic_optimizer", "actor", "actor_optimizer"):
        _same_saved(sf_dir / f"models/{name}_{part}", th_dir / f"models/{name}_{part}", f"{policy} {part}",
                    atol=1e-6 if policy == "TD3" else 3e-5)
    if policy == "DDPG":  # resume from the saved files (each run's own)
        argv = ["--policy", policy, *TD3_ARGV[:-1], "--max_timesteps", "60", "--load_model", "default"]
        for _, _, _, where in runs:
            monkeypatch.chdir(where)
        runs = _run(tmp_path, monkeypatch, capsys, "td3/main.py", argv, TD3_SIBLINGS, {"gym": tiny_pendulum})
        (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = runs
        assert sf_warned == th_warned
        same_printout(sf_out, th_out, what=f"{policy} loaded")


# fxia22/pointnet.pytorch --------------------------------------------------------------------

_NUMBERS = re.compile(r"-?\d+\.\d+")


def test_pointnet_model_checks_like_torch(tmp_path, monkeypatch, capsys):
    """pointnet.pytorch's ``pointnet/model.py`` run as a script: STN3d and STNkd(64) (a
    ``Variable(torch.from_numpy(np.eye(k).flatten()...)).view(1, k*k).repeat(batchsize, 1)``
    identity added to the regressed transform), ``feature_transform_regularizer``
    (``torch.norm(torch.bmm(trans, trans.transpose(2, 1)) - torch.eye(d)[None], dim=(1, 2))``,
    printed as a tensor with its ``grad_fn``), PointNetfeat global and per-point
    (``torch.bmm`` by the learnt transform, ``torch.max(x, 2, keepdim=True)[0]``,
    ``.repeat(1, 1, n_pts)`` and ``torch.cat``), PointNetCls and PointNetDenseCls: every
    line agrees (the losses to rtol 1e-5)."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(tmp_path, monkeypatch, capsys, "pointnet/model.py")
    assert sf_warned == th_warned
    assert len(th_out) == 8 and th_out[1].startswith("loss tensor(")
    same_printout(sf_out, th_out, what="pointnet model")


def _first_step(sf_out, th_out, what):
    """The first train line (before any step) to rtol 1e-5, the test line after it (one Adam
    step of a chaotic program: see below) to 1e-4."""
    first = [i for i, line in enumerate(th_out) if line.startswith("[0: 0/")]
    assert len(first) == 2, th_out  # the first train line and the first test line
    same_printout([sf_out[first[0]]], [th_out[first[0]]], what=what)
    same_printout([sf_out[first[1]]], [th_out[first[1]]], rtol=1e-4, what=what)


def test_pointnet_train_classification_like_torch(tmp_path, monkeypatch, capsys):
    """pointnet.pytorch's ``utils/train_classification.py`` with ``--feature_transform`` on a
    ShapeNet-layout folder of synthetic clouds (``programs/pointnet/_standin.py``), read by
    its ``ShapeNetDataset`` (``np.loadtxt``, resampling by ``np.random.choice``, a random
    rotation and jitter, ``torch.from_numpy``): 2 epochs of 3 batches with dropout 0.3
    (torch's masks), Adam and a ``StepLR`` stepped before the optimizer (torch's
    UserWarning), a test batch every 10 steps through ``next(enumerate(testdataloader,
    0))``, a ``torch.save`` per epoch and the final accuracy under tqdm.

    The warnings, the printed text and the checkpoint keys agree, and so do the numbers of
    the first step (the train loss to rtol 1e-5; the test loss after that step to 1e-4,
    measured 1.2e-5). The later steps cannot: the program
    is chaotic under Adam (biases before train-mode BatchNorm and max-pooled features
    have zero gradient in exact arithmetic, so Adam steps their rounding noise by +-lr; torch
    itself, with 30% of its initial weights moved by one ulp, prints its second train loss
    3e-4 apart and its fourth 2% apart, measured; shardflow's are as far). So the trained
    model is compared on its own: torch's last checkpoint is read by each run
    (``--model``, shardflow reading torch's file) and one more epoch starts from it, whose
    first train and test lines agree as closely again."""
    from .programs.pointnet._standin import write_shapenet

    data = tmp_path / "shapenet"
    write_shapenet(data)
    argv = ["--dataset", str(data), "--batchSize", "6", "--num_points", "32", "--workers", "0", "--nepoch", "2",
            "--feature_transform"]
    runs = _run(tmp_path, monkeypatch, capsys, "pointnet/train_classification.py", argv, ("model", "dataset"))
    (_, th_out, th_warned, th_dir), (_, sf_out, sf_warned, sf_dir) = runs
    assert sf_warned == th_warned
    assert any("`lr_scheduler.step()` before `optimizer.step()`" in w for w in th_warned)
    assert sum(" train loss: " in line for line in th_out) == 6 and th_out[-1].startswith("final accuracy")
    assert [_NUMBERS.sub("#", line) for line in sf_out] == [_NUMBERS.sub("#", line) for line in th_out]
    _first_step(sf_out, th_out, "pointnet first step")
    import torch

    import shardflow

    for epoch in (0, 1):
        name = f"cls/cls_model_{epoch}.pth"
        assert list(shardflow.load(sf_dir / name)) == list(torch.load(th_dir / name)), name
    resumed = _run(tmp_path, monkeypatch, capsys, "pointnet/train_classification.py",
                   [*argv[:-2], "1", "--feature_transform", "--model", str(th_dir / "cls/cls_model_1.pth")],
                   ("model", "dataset"), tag="_resumed")
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = resumed
    assert sf_warned == th_warned
    _first_step(sf_out, th_out, "pointnet resumed first step")


# gram-ai/capsule-networks -------------------------------------------------------------------


def test_capsule_network_trains_like_torch(tmp_path, monkeypatch, capsys):
    """gram-ai/capsule-networks' ``capsule_network.py`` as a script (``programs/capsnet``):
    primary capsules from 8 ``Conv2d`` and ``torch.cat``, digit capsules by 3 iterations of
    dynamic routing (``x[None, :, :, None, :] @ route_weights[:, None, :, :, :]``, the
    repository's ``softmax`` over dim 2 through transpose / ``contiguous().view`` /
    ``F.softmax``, ``squash``), class lengths, the reconstruction decoder masked by
    ``torch.eye(10).index_select`` (labels in training, the longest capsule at test), the
    margin loss through ``F.relu(..., inplace=True)`` and ``nn.MSELoss(size_average=False)``
    (torch's deprecation UserWarning); random shifts by ``np.random.randint`` into
    ``torch.zeros(*x.size())``; trained 2 epochs of one batch of 4 by torchnet's Engine
    (``Adam.step(closure)``), tested each epoch, a ``torch.save`` per epoch and
    ``make_grid`` images of the reconstructions (torchnet, visdom and MNIST are stand-ins,
    ``programs/capsnet/_standin.py``).

    Every printed line (4 decimals) and warning agrees; what the loggers got (epoch losses
    and accuracies, the confusion matrix, the image grids) to 1e-6, each epoch's saved state
    to rtol 1e-5 and atol 5e-6 (Adam with lr 1e-3 steps an element whose gradient is near
    its eps by rounding noise: 1 of 663552 primary-capsule weights was 1.3e-6 apart,
    measured)."""
    import torch

    import shardflow

    from .programs.capsnet._standin import modules

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        (where / "epochs").mkdir(parents=True)
        monkeypatch.chdir(where)
        lib.manual_seed(0)
        np.random.seed(0)
        stand_ins = modules(lib, n_train=4, n_test=4)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run_script(HERE / "capsnet/capsule_network.py", use_sf, modules=stand_ins)
        runs.append((capsys.readouterr().out.splitlines(), [f"{w.category.__name__}: {w.message}" for w in caught],
                     stand_ins["torchnet"].LOGGED, where))
    (th_out, th_warned, th_logged, th_dir), (sf_out, sf_warned, sf_logged, sf_dir) = runs
    assert sf_warned == th_warned
    assert any("size_average and reduce args will be deprecated" in w for w in th_warned)
    assert len(th_out) == 5 and th_out[0] == "# parameters: 8215568"
    same_printout(sf_out, th_out, what="capsule network")
    assert [title for title, _ in sf_logged] == [title for title, _ in th_logged]
    assert len(th_logged) == 14
    for (title, sf_values), (_, th_values) in zip(sf_logged, th_logged, strict=True):
        for sf_value, th_value in zip(sf_values, th_values, strict=True):
            assert_close(sf_value, th_value, title)
    for epoch in (1, 2):
        _same_saved(sf_dir / f"epochs/epoch_{epoch}.pt", th_dir / f"epochs/epoch_{epoch}.pt", f"epoch {epoch}",
                    atol=5e-6)


# Grad-CAM with a full backward hook ---------------------------------------------------------


def test_gradcam_full_backward_hook_like_torch(tmp_path, monkeypatch, capsys):
    """The common ~60-line Grad-CAM (``programs/gradcam/gradcam.py``): ``register_forward_hook``
    for the activation and ``register_full_backward_hook`` for ``grad_output[0]`` on a
    ``ReLU`` inside ``nn.Sequential``, ``output.backward(gradient=one_hot,
    retain_graph=True)`` with ``zeros_like(...).scatter_``, the gradient's spatial mean as
    channel weights, ``F.interpolate(mode='bilinear')``, per-image min-max through
    ``view(...).min(dim=1)[0]``, forced classes, ``handle.remove()`` leaving no hooks, and
    the hook on a conv whose output a ``ReLU(inplace=True)`` modifies (torch 2.13 runs it).
    Every printed line agrees (numbers to rtol 1e-5, the CAM tensor as torch prints it).

    Seeded 1: from seed 0 one BatchNorm output of the trained CNN is -1.5e-7 in float64 and
    within float32 rounding of 0 (shardflow's +1.7e-7, torch's negative), so the ReLU passes
    one gradient element in one run only (measured)."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(tmp_path, monkeypatch, capsys, "gradcam/gradcam.py")
    assert sf_warned == th_warned
    assert len(th_out) == 15 and th_out[-1].startswith("inplace cam mean")
    assert th_out[-2] == "hooks left 0 0"
    same_printout(sf_out, th_out, what="gradcam")


# lukemelas/EfficientNet-PyTorch -------------------------------------------------------------


@pytest.mark.parametrize("padding", ["static", "dynamic"])
def test_efficientnet_pytorch_core_like_torch(tmp_path, monkeypatch, capsys, padding):
    """lukemelas/EfficientNet-PyTorch's core (``programs/efficientnet/effnet_tiny.py``):
    ``Conv2dStaticSamePadding`` (``nn.ZeroPad2d`` / ``nn.Identity`` built from the image
    size, printed in the block's repr) or ``Conv2dDynamicSamePadding`` (``F.pad`` in forward),
    the memory-efficient Swish as a custom ``autograd.Function`` (``ctx.save_for_backward``,
    ``ctx.saved_tensors``), MBConv blocks with squeeze-and-excitation, ``drop_connect``
    (``keep_prob + torch.rand([B, 1, 1, 1])``, ``torch.floor``: torch's draws) and dropout
    0.2 (torch's masks), BlockArgs ``_replace`` with ``round_filters`` at width 0.25; 4 SGD
    steps, then eval with ``set_swish(memory_efficient=False)``. Every line agrees (losses
    to rtol 1e-5)."""
    argv = ["dynamic"] if padding == "dynamic" else []
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(tmp_path, monkeypatch, capsys,
                                                                "efficientnet/effnet_tiny.py", argv)
    assert sf_warned == th_warned
    assert sum(line.startswith("step ") for line in th_out) == 4
    assert any("ZeroPad2d" in line for line in th_out) == (padding == "static")
    same_printout(sf_out, th_out, what=f"efficientnet {padding}")
