"""yunjey/pytorch-tutorial (tests/parity/programs/yunjey_tutorial/) run as scripts on torch
and, with only their imports changed, on shardflow, from the same start, compared step by
step (see ``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

How the two runs start alike (all in :func:`_run_both`):

* torchvision is ``torchvision_standin.py`` (synthetic data sets, transforms, ``save_image``
  keeping the tensor, small "pretrained" models with fixed NumPy weights), loaded once per
  framework and put where the scripts' ``import torchvision`` finds it;
* every ``nn.Linear`` / ``nn.Conv2d`` / ``nn.BatchNorm2d`` / ``nn.LSTM`` / ``nn.Embedding`` the
  script builds starts from torch's: the torch run records each new layer's state, the
  shardflow run (same order) loads it;
* a ``DataLoader(shuffle=True)`` visits the data in one shared NumPy order (the frameworks'
  generators differ), and named random functions (``torch.randn``...) give the same NumPy
  draws (``_harness._Draws``). The loader, its batching and collation are each framework's own.

Each run happens in its own folder, so the checkpoints the scripts save are compared too;
``print(model)`` / ``print(optimizer)`` of the scripts' globals are compared as text
(``_same_prints``).
"""

import os
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from shardflow.testing.parity import load_torch_file

from .programs._harness import (
    _Draws,
    _Through,
    assert_close,
    record_calls,
    record_module_outputs,
    run_script,
)

pytestmark = pytest.mark.usefixtures("torch_single_thread")

HERE = Path(__file__).parent / "programs" / "yunjey_tutorial"
# Adam's step is m / sqrt(v): for a weight whose gradient is tiny and rounding-dominated at
# some step, it turns a last-ulp difference of that gradient into a difference of a small
# fraction of lr. Measured: 1 of 25088 fc1 weights of feedforward_neural_network (lr 1e-3)
# ends 3e-6 apart (0.3% of lr); every loss agrees to 1e-5. Weights after Adam: atol 1e-5.
ADAM_ATOL = 1e-5
LAYERS = ("Linear", "Conv2d", "BatchNorm2d", "LSTM", "Embedding")


def _standin(use_sf):
    return load_torch_file(HERE / "torchvision_standin.py", use_shardflow=use_sf,
                           name=f"yunjey_torchvision_{'shardflow' if use_sf else 'torch'}")


def _layers_from_torch(mod, records, use_sf, done):
    """The module's ``nn.<layer>(...)`` builds the framework's own layer, then (torch run)
    records its state or (shardflow run) loads the recorded one, in construction order
    (``done``: the layers loaded so far, shared by the script and its sibling modules)."""
    nn_view = _Through(mod.nn)
    lib = mod.torch

    def factory(name):
        base = getattr(mod.nn, name)

        def build(*args, **kwargs):
            layer = base(*args, **kwargs)
            if not use_sf:
                records.append((name, {k: v.detach().numpy().copy() for k, v in layer.state_dict().items()}))
                return layer
            got, state = records[len(done)]
            assert got == name, f"layer {len(done)}: torch built {got}, shardflow {name}"
            layer.load_state_dict({k: lib.from_numpy(v) for k, v in state.items()})
            done.append(layer)
            return layer

        return build

    for name in LAYERS:
        setattr(nn_view, name, factory(name))
    mod.nn = nn_view


def _shared_order(lib, rng):
    """``DataLoader`` whose ``shuffle=True`` visits indices in ``rng``'s permutation."""
    base = lib.utils.data.DataLoader

    class SharedOrder(lib.utils.data.Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(rng.permutation(self.n).tolist())

        def __len__(self):
            return self.n

    def DataLoader(dataset, *args, shuffle=False, **kwargs):
        if shuffle:
            kwargs["sampler"] = SharedOrder(len(dataset))
        return base(dataset, *args, **kwargs)

    return DataLoader


def _run_both(name, tmp_path, monkeypatch, capsys, draws=(), losses=("CrossEntropyLoss",),
              calls=(), sizes=(60, 20), argv=(), seed=0, siblings=(), setup=None,
              more_modules=dict):
    """Run ``yunjey_tutorial/<name>.py`` on torch, then on shardflow, each in its own folder.
    ``siblings`` are the script's own modules (``from data_utils import Corpus``), loaded in
    that order, rewritten too and seen through the same patches; ``more_modules()`` gives
    further ``sys.modules`` stand-ins. Returns ``[dict(out=printed lines, losses=[...],
    mod=module, dir=folder, saved=images, siblings={name: module})]``."""
    import torch

    torch.manual_seed(seed)  # torch's initial weights, which both runs start from
    records, runs = [], []
    for use_sf in (False, True):
        standin = _standin(use_sf)
        standin.reset(*sizes)
        work = tmp_path / ("shardflow" if use_sf else "torch")
        work.mkdir()
        monkeypatch.chdir(work)
        if setup is not None:
            setup(work)
        modules = {**standin.modules(f"yunjey_tv_{use_sf}"), **more_modules()}
        for key, value in modules.items():  # the siblings import them too
            monkeypatch.setitem(sys.modules, key, value)
        script = HERE / f"{name}.py"
        recorded, done, shuffle_rng = [], [], np.random.default_rng(1)

        def patch(mod, _sf=use_sf):
            if not hasattr(mod, "torch"):
                return
            lib = mod.torch
            view = _Draws(lib, np.random.default_rng(0), draws)
            view.utils = _Through(lib.utils)
            view.utils.data = _Through(lib.utils.data)
            view.utils.data.DataLoader = _shared_order(lib, shuffle_rng)
            mod.torch = view
            if hasattr(mod, "nn"):
                _layers_from_torch(mod, records, _sf, done)

        loaded = {}
        for sibling in siblings:
            loaded[sibling] = load_torch_file(script.parent / f"{sibling}.py", use_shardflow=use_sf,
                                              name=f"yunjey_{sibling}_{'shardflow' if use_sf else 'torch'}")
            patch(loaded[sibling])
            modules[sibling] = loaded[sibling]
            monkeypatch.setitem(sys.modules, sibling, loaded[sibling])

        def prepare(mod, _rec=recorded):
            patch(mod)
            if hasattr(mod, "nn"):
                for loss in losses:
                    record_module_outputs(mod, "nn", loss, _rec)
            for module_path, func in calls:  # e.g. ("F", "binary_cross_entropy")
                record_calls(mod, module_path, func, _rec)

        mod = run_script(script, use_sf, argv=argv, modules=modules, after_imports=prepare)
        runs.append(dict(out=capsys.readouterr().out.splitlines(),
                         losses=[v[1] if isinstance(v, tuple) else v for v in recorded],
                         mod=mod, dir=work, saved=dict(standin.SAVED), siblings=loaded))
    return runs


def _same_prints(th, sf, *names):
    """``print(model)`` / ``print(optimizer)`` of the script's globals: the same text
    (shardflow's own name where torch prints ``torch.``)."""
    for name in names:
        assert str(getattr(sf["mod"], name)).replace("shardflow.", "torch.") == str(getattr(th["mod"], name)), name


def _checkpoint(run, filename):
    """The state dict a script saved, read back by its own framework, as arrays."""
    lib = run["mod"].torch
    state = lib.load(os.fspath(run["dir"] / filename))
    return {k: np.asarray(v.numpy()) for k, v in state.items()}


def _same_checkpoint(th, sf, filename, rtol=1e-5, atol=1e-6, bounded=None):
    """Same keys, dtypes and values; ``bounded`` (``{key: bound}``) holds an entry only to an
    absolute bound (a parameter whose gradient is zero in exact arithmetic)."""
    th_state, sf_state = _checkpoint(th, filename), _checkpoint(sf, filename)
    assert list(sf_state) == list(th_state)
    for k in th_state:
        assert sf_state[k].dtype == th_state[k].dtype, k
        if k in (bounded or {}):
            assert_close(sf_state[k], th_state[k], f"{filename}: {k} (bounded)", 0, bounded[k])
        else:
            assert_close(sf_state[k], th_state[k], f"{filename}: {k}", rtol, atol)


@pytest.mark.parametrize("name, steps", [
    ("feedforward_neural_network", 12),
    ("logistic_regression", 12),
    ("convolutional_neural_network", 12),
    ("recurrent_neural_network", 12),
    ("bidirectional_recurrent_neural_network", 12),
])
def test_mnist_classifiers_train_like_torch(tmp_path, monkeypatch, capsys, name, steps):
    """01-basics feedforward_neural_network (Linear-ReLU-Linear, Adam) and
    logistic_regression (one Linear, SGD), 02-intermediate convolutional_neural_network
    (Conv-BatchNorm-ReLU-MaxPool twice, ``model.eval()`` for the test: running statistics in
    the checkpoint), recurrent_neural_network (2-layer LSTM over the image rows, initial
    states given) and its bidirectional version, run as scripts on the MNIST stand-in: every
    CrossEntropyLoss to rtol 1e-5, the printout (losses at 4 decimals; the accuracy, which
    logistic_regression prints from a tensor: ``tensor(...)`` in the line) the same text,
    and the saved ``model.ckpt`` (its keys, dtypes and values; atol ``ADAM_ATOL``, see there);
    ``print(model)``, ``print(optimizer)`` and ``print(criterion)`` the same text."""
    th, sf = _run_both(name, tmp_path, monkeypatch, capsys)
    _same_prints(th, sf, "model", "optimizer", "criterion")
    assert len(th["losses"]) == len(sf["losses"]) == steps
    assert_close(sf["losses"], th["losses"], f"{name} losses")
    assert sf["out"] == th["out"]
    assert len(th["out"]) == steps // 2 + 1
    # a conv bias right before a training-mode BatchNorm has zero gradient in exact
    # arithmetic (the norm removes the channel mean): Adam steps it by about +-lr per step
    # on the sign of rounding noise, so it is only bounded, by steps * lr
    # (and so is the running mean of that norm, which follows the bias)
    keys = ("layer1.0.bias", "layer2.0.bias", "layer1.1.running_mean", "layer2.1.running_mean")
    bounded = dict.fromkeys(keys, steps * 1e-3) if name.startswith("conv") else None
    _same_checkpoint(th, sf, "model.ckpt", atol=ADAM_ATOL, bounded=bounded)


def test_linear_regression_fits_like_torch(tmp_path, monkeypatch, capsys):
    """01-basics linear_regression: nn.Linear(1, 1), MSELoss, 60 SGD steps on the file's own
    15 points; every MSELoss to rtol 1e-5, the 12 printed lines, the fitted line and the
    saved ``model.ckpt``."""
    th, sf = _run_both("linear_regression", tmp_path, monkeypatch, capsys, losses=("MSELoss",))
    assert len(th["losses"]) == len(sf["losses"]) == 60
    assert_close(sf["losses"], th["losses"], "losses")
    assert sf["out"] == th["out"] and len(th["out"]) == 12
    assert_close(sf["mod"].predicted, th["mod"].predicted, "predicted")
    _same_checkpoint(th, sf, "model.ckpt")


def test_deep_residual_network_trains_like_torch(tmp_path, monkeypatch, capsys):
    """02-intermediate deep_residual_network: the CIFAR ResNet (3 stages of 2 residual blocks,
    in-place ``out += residual``, ``ReLU(inplace=True)``, strided downsample Sequentials,
    AvgPool2d(8)), Adam with the learning rate decayed by hand through
    ``param_group['lr']`` every 2 epochs, on the CIFAR stand-in with Pad / flip / crop
    augmentation (shared draws). Every loss to rtol 1e-5, the printout, the saved
    ``resnet.ckpt`` (atol 1e-4, 10% of lr; ``num_batches_tracked`` included), and the decayed
    lr. A ReLU input within rounding of 0 makes the runs part: torch seed and sizes are
    chosen where none is met (RESNET_SEED, below, says how it was measured)."""
    th, sf = _run_both("deep_residual_network", tmp_path, monkeypatch, capsys, sizes=(RESNET_TRAIN, 20),
                       seed=RESNET_SEED)
    _same_prints(th, sf, "model", "optimizer")
    assert len(th["losses"]) == len(sf["losses"]) == 3 * RESNET_TRAIN // 10
    # rtol 5e-4: torch's convolutions sum in another order on an AVX512 CPU than on AVX2 (where
    # RESNET_SEED was measured): there the losses agree to 1e-5, on AVX512 to 1.8e-4 by step 6
    assert_close(sf["losses"], th["losses"], "losses", rtol=5e-4)
    from .test_public_programs_more_h import same_printout

    same_printout(sf["out"], th["out"], rtol=5e-4, atol=1e-4, what="resnet printout")  # 4 decimals
    assert len(th["out"]) == 3 * (RESNET_TRAIN // 20) + 1
    # Adam's step normalises rounding too (see ADAM_ATOL): measured, a few conv weights end
    # up to 4.5e-5 apart after the 6 steps on AVX2 (layer3.1.conv2: 2 of 36864), 4.5% of lr;
    # on AVX512 (torch's other summation order) up to 3.2e-4 (5% of the first conv's weights)
    _same_checkpoint(th, sf, "resnet.ckpt", atol=1e-3)
    assert sf["mod"].optimizer.param_groups[0]["lr"] == th["mod"].optimizer.param_groups[0]["lr"] == 0.001 / 3


# The ResNet's 15 ReLUs each see ~10^4-10^5 values that come out of a BatchNorm; now and then
# one lies within float32 rounding of 0 and its sign differs between the frameworks (measured:
# 2.1e-6 in torch, -1.5e-7 in shardflow, in layer3.1 for torch seed 10, where every other
# input agrees to 1e-5): its gradient then flips from that element's contribution to none,
# 0.5-4% of a weight's gradient, and Adam carries it on. Measured on this program: with 40
# training images (12 steps) every torch seed of 1-29 met such an input somewhere (losses
# apart by 3e-5 to 4e-3 relative); with 20 images (6 steps) seed 8 met none, and the
# losses agreed to 2e-7. Session 29's exact ToTensor division (uint8 / 255 now torch's to
# the bit, it was 1 ulp off) moved every input by rounding, and seed 8 met one: of seeds 1-12
# only 6 and 7 meet none now. So: seed 6, 20 images, 2 steps per epoch, 3 epochs (the lr
# decay after the second). The test therefore guards the program's code path and the
# losses' agreement on a seed without such a tie, not rounding-level equality of training.
# Session 36: torch's AVX512 kernels (this machine) sum in another order than its AVX2 ones,
# which moves the ties: seed 6 met one on AVX512; seed 7 meets none there and stays within
# the test's bounds with torch forced to AVX2 (ATEN_CPU_CAPABILITY=avx2, with and without
# ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2); the bounds below cover both.
RESNET_SEED = 7
RESNET_TRAIN = 20


_NUMBER = re.compile(r"-?\d+(?:\.(\d+))?")


def _same_printout(sf_lines, th_lines, rtol=1e-5):
    """The same lines but for the last printed digit of numbers: a float32 sum of thousands
    (the VAE's summed BCE, ~5e3) agrees to rtol 1e-5 and still shows one ulp (5e-4) apart at
    4 decimals. Text is compared exactly, each number to rtol plus one unit of its last digit."""
    assert len(sf_lines) == len(th_lines)
    for sf_line, th_line in zip(sf_lines, th_lines):
        assert _NUMBER.sub("#", sf_line) == _NUMBER.sub("#", th_line), (sf_line, th_line)
        for a, b in zip(_NUMBER.finditer(sf_line), _NUMBER.finditer(th_line)):
            unit = 10.0 ** -len(b.group(1) or "")
            assert abs(float(a.group()) - float(b.group())) <= rtol * abs(float(b.group())) + unit, (sf_line, th_line)


def _same_saved_images(th, sf, rtol=1e-5, atol=1e-6):
    assert list(sf["saved"]) == list(th["saved"]) and th["saved"]
    for path, image in th["saved"].items():
        assert_close(sf["saved"][path].numpy(), image.numpy(), path, rtol, atol)


def test_gan_trains_like_torch(tmp_path, monkeypatch, capsys):
    """03-advanced generative_adversarial_network: a Sequential MLP discriminator (LeakyReLU,
    Sigmoid) and generator (Tanh), BCELoss against ``torch.ones`` / ``torch.zeros`` labels,
    two Adam optimizers, ``reset_grad``; the noise is ``torch.randn`` (shared draws). Every
    BCELoss (real, fake, generator) to rtol 1e-5, the printout (``D(x)``, ``D(G(z))`` means at
    2 decimals), the images ``save_image`` got (``denorm``: clamp) and both checkpoints
    (atol ``ADAM_ATOL``)."""
    th, sf = _run_both("generative_adversarial_network", tmp_path, monkeypatch, capsys, draws=("randn",),
                       losses=("BCELoss",))
    _same_prints(th, sf, "D", "G", "d_optimizer", "g_optimizer")
    assert len(th["losses"]) == len(sf["losses"]) == 3 * 12
    assert_close(sf["losses"], th["losses"], "BCE losses")
    assert sf["out"] == th["out"] and len(th["out"]) == 6
    _same_saved_images(th, sf)
    assert sorted(th["saved"]) == ["samples/fake_images-1.png", "samples/fake_images-2.png", "samples/real_images.png"]
    for name in ("G.ckpt", "D.ckpt"):
        _same_checkpoint(th, sf, name, atol=ADAM_ATOL)


def test_vae_trains_like_torch(tmp_path, monkeypatch, capsys):
    """03-advanced variational_autoencoder: encode / reparameterize (``torch.randn_like``,
    shared draws) / decode with ``F.sigmoid``, the summed ``F.binary_cross_entropy(...,
    size_average=False)`` (legacy argument: torch warns and sums) plus the KL term, Adam; after
    each epoch samples from ``torch.randn`` and reconstructions joined by ``torch.cat(dim=3)``
    under ``no_grad``. Every reconstruction loss to rtol 1e-5, the printout (``_same_printout``:
    the summed loss is ~5e3, and one float32 ulp shows at 4 decimals), the saved images."""
    with pytest.warns(UserWarning, match="size_average"):
        th, sf = _run_both("variational_autoencoder", tmp_path, monkeypatch, capsys, draws=("randn", "randn_like"),
                           losses=(), calls=(("F", "binary_cross_entropy"),))
    _same_prints(th, sf, "model", "optimizer")
    assert len(th["losses"]) == len(sf["losses"]) == 12
    assert_close(sf["losses"], th["losses"], "reconstruction losses")
    _same_printout(sf["out"], th["out"])
    assert len(th["out"]) == 6
    _same_saved_images(th, sf)
    assert len(th["saved"]) == 4


def _corpus(work):
    """A made-up corpus for ``data/train.txt``: 30 lines of 4-9 words over 16 words."""
    rng = np.random.default_rng(5)
    words = "the cat dog sat on a mat ran far away big small red tree under bird".split()
    (work / "data").mkdir()
    lines = [" ".join(rng.choice(words, rng.integers(4, 10))) for _ in range(30)]
    (work / "data" / "train.txt").write_text("\n".join(lines) + "\n")


def test_language_model_trains_and_samples_like_torch(tmp_path, monkeypatch, capsys):
    """02-intermediate language_model (main.py with its data_utils.py, run as a script): the
    corpus read into ``torch.LongTensor(tokens)`` item by item, an Embedding-LSTM-Linear
    model trained with truncated backpropagation (``detach`` of the carried states), Adam
    and ``clip_grad_norm_(0.5)``, then 20 words sampled with ``torch.multinomial`` (shared
    draws) under ``no_grad``, ``input.fill_(word_id)``. Every loss to rtol 1e-5, the
    printout (perplexity through ``np.exp(loss.item())``), ``sample.txt`` and the
    checkpoint (atol ``ADAM_ATOL``)."""
    th, sf = _run_both("language_model/main", tmp_path, monkeypatch, capsys, draws=("multinomial",),
                       siblings=("data_utils",), setup=_corpus)
    assert th["mod"].ids.shape == (4, th["mod"].ids.size(1)) and th["mod"].num_batches >= 5
    assert list(sf["mod"].ids.shape) == list(th["mod"].ids.shape)
    assert np.array_equal(sf["mod"].ids.numpy(), th["mod"].ids.numpy())
    steps = len(range(0, th["mod"].ids.size(1) - 5, 5))  # the script's own loop, seq_length 5
    _same_prints(th, sf, "model", "optimizer")
    assert len(th["losses"]) == len(sf["losses"]) == 2 * steps
    assert_close(sf["losses"], th["losses"], "losses")
    assert sf["out"] == th["out"]
    assert (sf["dir"] / "sample.txt").read_text() == (th["dir"] / "sample.txt").read_text()
    assert len((th["dir"] / "sample.txt").read_text().split()) >= 10
    _same_checkpoint(th, sf, "model.ckpt", atol=ADAM_ATOL)


def test_pytorch_basics_prints_like_torch(tmp_path, monkeypatch, capsys):
    """01-basics pytorch_basics, run as a script: what it prints -- ``print(x.grad)`` of 0-d
    tensors, ``print('w: ', linear.weight)`` (``Parameter containing:`` and the tensor),
    ``loss.item()`` before and after one SGD step, gradients, a data set item's
    ``image.size()`` and label, the frozen "pretrained" resnet's new ``fc`` output size --
    is the same text, numbers to rtol 1e-5 (``_same_printout``: ``loss.item()`` prints all
    of a float32's digits). One deviation, by design: shardflow prints its ``Size`` as
    ``shardflow.Size([...])`` where torch prints ``torch.Size([...])`` (its dtypes likewise),
    so that prefix is mapped before comparing. The whole model saved and loaded back
    (``torch.save(resnet)``, ``torch.load(weights_only=False)``) and the reloaded state dict
    give the same outputs; the frozen parameters stay frozen."""
    th, sf = _run_both("pytorch_basics", tmp_path, monkeypatch, capsys, draws=("randn",), losses=("MSELoss",))
    assert_close(sf["losses"], th["losses"], "MSE losses")
    assert len(th["losses"]) == 2
    sf_out = [line.replace("shardflow.Size(", "torch.Size(") for line in sf["out"]]
    _same_printout(sf_out, th["out"])
    assert th["out"][:3] == ["tensor(2.)", "tensor(1.)", "tensor(1.)"]
    assert "w:  Parameter containing:" in th["out"] and "torch.Size([3, 32, 32])" in th["out"]
    assert th["out"][-1] == "torch.Size([4, 100])"
    for run in (th, sf):
        mod = run["mod"]
        assert type(mod.model).__name__ == "ResNet" and mod.model is not mod.resnet
        assert [p.requires_grad for p in mod.model.parameters()] == [False] * 3 + [True] * 2
    for run in (th, sf):
        run["reloaded"] = run["mod"].model(run["mod"].images).detach().numpy()
    assert_close(sf["reloaded"], th["reloaded"], "the reloaded whole model's outputs")
    assert_close(sf["mod"].outputs.detach().numpy(), th["mod"].outputs.detach().numpy(), "outputs")
    assert_close(sf["reloaded"], sf["mod"].outputs.detach().numpy(), "shardflow reloaded vs original", 0, 0)


def test_shuffled_loader_of_an_empty_dataset_is_refused_like_torch():
    """pytorch_basics' CustomDataset as written (``__len__`` 0) with ``shuffle=True``: torch
    refuses it when the loader is built (ValueError naming num_samples); so does shardflow,
    with torch's words and then why (the data set is empty) and the fix."""
    import torch

    import shardflow

    for lib in (torch, shardflow):
        class Empty(lib.utils.data.Dataset):
            def __getitem__(self, index):
                pass

            def __len__(self):
                return 0

        with pytest.raises(ValueError, match="^num_samples should be a positive integer value, but got num_samples=0"):
            lib.utils.data.DataLoader(dataset=Empty(), batch_size=64, shuffle=True)
    with pytest.raises(ValueError, match="data set is empty"):
        shardflow.utils.data.DataLoader(dataset=Empty(), batch_size=64, shuffle=True)


def _style_images(work):
    """Content (40x48) and style (24x24) RGB PNGs of smooth made-up patterns."""
    from PIL import Image

    yy, xx = np.mgrid[0:40, 0:48]
    content = np.stack([128 + 100 * np.sin(xx / 5.0), 128 + 100 * np.cos(yy / 7.0), (xx * yy) % 256], -1)
    yy, xx = np.mgrid[0:24, 0:24]
    style = np.stack([(xx * 11) % 256, (yy * 13) % 256, ((xx + yy) * 7) % 256], -1)
    Image.fromarray(content.astype(np.uint8)).save(work / "content.png")
    Image.fromarray(style.astype(np.uint8)).save(work / "style.png")


def test_neural_style_transfer_like_torch(tmp_path, monkeypatch, capsys):
    """03-advanced neural_style_transfer, run as a script with its argparse options
    (``--max_size 48 --total_step 6 --log_step 2 --sample_step 3``): PIL images resized and
    normalised, the target image a ``clone().requires_grad_(True)`` leaf optimised by Adam
    (``betas=[0.5, 0.999]``), VGG features picked by ``_modules`` names, content loss and
    Gram-matrix style loss (``view``, ``mm``, ``t()``), the image denormalised and
    ``clamp_``-ed for ``save_image``. Every ``torch.mean`` the losses are made of to rtol
    1e-5, the printout (the config ``Namespace`` too), the saved images and the final target."""
    argv = ["--content", "content.png", "--style", "style.png", "--max_size", "48", "--total_step", "6",
            "--log_step", "2", "--sample_step", "3"]
    th, sf = _run_both("neural_style_transfer", tmp_path, monkeypatch, capsys, losses=(),
                       calls=(("torch", "mean"),), argv=argv, setup=_style_images)
    assert len(th["losses"]) == len(sf["losses"]) == 6 * 10
    assert_close(sf["losses"], th["losses"], "content and style means")
    _same_printout(sf["out"], th["out"])
    assert len(th["out"]) == 4 and th["out"][0].startswith("Namespace(")
    _same_saved_images(th, sf)
    assert sorted(th["saved"]) == ["output-3.png", "output-6.png"]
    assert th["saved"]["output-3.png"].shape == (3, 40, 48)


CAPTIONING = HERE / "image_captioning"


def _coco_standin():
    return load_torch_file(CAPTIONING / "coco_nltk_standin.py", use_shardflow=False, name="yunjey_coco_nltk_standin")


def _caption_data(monkeypatch):
    """``setup`` for train.py: 12 RGB images of 40x40 under data/images, 24 made-up captions
    (two per image) in COCO's caption JSON layout, and the pickled Vocabulary that the
    tutorial's build_vocab.py makes of them (its ``build_vocab``, threshold 1)."""
    import json

    from PIL import Image

    def setup(work):
        rng = np.random.default_rng(3)
        (work / "data" / "images").mkdir(parents=True)
        words = "a man dog cat with on the red ball grass runs sits plays big small near".split()
        images, annotations = [], []
        for i in range(12):
            Image.fromarray(rng.integers(0, 256, (40, 40, 3)).astype(np.uint8)).save(work / "data" / "images" / f"{i}.png")
            images.append({"id": i, "file_name": f"{i}.png"})
            for j in range(2):
                caption = " ".join(rng.choice(words, rng.integers(3, 9))).capitalize() + "."
                annotations.append({"id": 2 * i + j, "image_id": i, "caption": caption})
        (work / "data" / "captions.json").write_text(json.dumps({"images": images, "annotations": annotations}))
        for key, value in _coco_standin().modules().items():
            monkeypatch.setitem(sys.modules, key, value)
        build_vocab = load_torch_file(CAPTIONING / "build_vocab.py", use_shardflow=False, name="yunjey_build_vocab_setup")
        with open(work / "data" / "vocab.pkl", "wb") as f:
            pickle.dump(build_vocab.build_vocab(str(work / "data" / "captions.json"), 1), f)

    return setup


def test_image_captioning_trains_like_torch(tmp_path, monkeypatch, capsys):
    """03-advanced image_captioning: train.py as a script with its own options (small sizes,
    ``--num_workers 0``) over its data_loader.py (a COCO Dataset with ``torch.Tensor(caption)``,
    a custom ``collate_fn`` sorting by length and padding through ``targets[i, :end] =
    cap[:end]``), model.py (the "pretrained" CNN's ``children()[:-1]`` under ``no_grad``,
    Linear + ``BatchNorm1d(momentum=0.01)``; an Embedding-LSTM decoder over
    ``pack_padded_sequence``, ``hiddens[0]`` the packed data) and build_vocab.py's pickled
    Vocabulary; the targets are ``pack_padded_sequence(captions, lengths)[0]``, Adam over a
    list of three modules' parameters. Every loss to rtol 1e-5, the printout (perplexity via
    ``np.exp``), the 8 checkpoints (atol ``ADAM_ATOL``; the Linear bias before the BatchNorm1d
    only bounded, see there), and greedy ``sample()`` captions from
    the last checkpoint (``outputs.max(1)``, ``torch.stack``) the same ids; then sample.py, run
    as a script on each run's checkpoints, prints the same caption."""
    argv = ["--model_path", "models/", "--crop_size", "32", "--vocab_path", "data/vocab.pkl",
            "--image_dir", "data/images", "--caption_path", "data/captions.json", "--log_step", "1",
            "--save_step", "3", "--embed_size", "8", "--hidden_size", "16", "--num_epochs", "2",
            "--batch_size", "4", "--num_workers", "0"]
    th, sf = _run_both("image_captioning/train", tmp_path, monkeypatch, capsys, argv=argv,
                       siblings=("build_vocab", "model", "data_loader"), setup=_caption_data(monkeypatch),
                       more_modules=lambda: _coco_standin().modules())
    assert len(th["losses"]) == len(sf["losses"]) == 12
    assert_close(sf["losses"], th["losses"], "losses")
    _same_printout(sf["out"], th["out"])
    assert len(th["out"]) == 13 and th["out"][0].startswith("Namespace(")
    for epoch in (1, 2):
        for step in (3, 6):
            # the encoder's Linear bias feeds a training-mode BatchNorm1d: zero gradient in
            # exact arithmetic, so Adam steps it on rounding noise, each run up to about lr a
            # step and the two in any direction (bound 2 * steps * lr: one run's 3 steps drifted
            # 3.7e-3 from the other's, after the division fix made the inputs torch's to the
            # bit), and the norm's running mean follows it
            bound = 2 * ((epoch - 1) * 6 + step) * 1e-3
            _same_checkpoint(th, sf, f"models/decoder-{epoch}-{step}.ckpt", atol=ADAM_ATOL)
            _same_checkpoint(th, sf, f"models/encoder-{epoch}-{step}.ckpt", atol=ADAM_ATOL,
                             bounded={"linear.bias": bound, "bn.running_mean": bound})
    captions = []
    for run in (th, sf):
        model, lib = run["siblings"]["model"], run["mod"].torch
        model.nn = model.nn._lib  # fresh models, loaded from the checkpoint below
        vocab = pickle.loads((run["dir"] / "data" / "vocab.pkl").read_bytes())
        encoder, decoder = model.EncoderCNN(8).eval(), model.DecoderRNN(8, 16, len(vocab), 1)
        encoder.load_state_dict(lib.load(os.fspath(run["dir"] / "models" / "encoder-2-6.ckpt")))
        decoder.load_state_dict(lib.load(os.fspath(run["dir"] / "models" / "decoder-2-6.ckpt")))
        images = lib.from_numpy(np.random.default_rng(4).random((3, 3, 32, 32)).astype(np.float32))
        with lib.no_grad():
            captions.append(decoder.sample(encoder(images)).numpy())
    assert captions[0].shape == (3, 20) and captions[0].dtype == captions[1].dtype == np.int64
    assert np.array_equal(captions[1], captions[0])
    # sample.py, as a script, on each run's own checkpoints: the same printed caption
    sentences, shown = [], []
    for run, use_sf in ((th, False), (sf, True)):
        monkeypatch.chdir(run["dir"])
        coco = _coco_standin()
        modules = {**_standin(use_sf).modules(f"yunjey_tv_{use_sf}"), **coco.modules(),
                   "build_vocab": run["siblings"]["build_vocab"], "model": run["siblings"]["model"]}
        run_script(CAPTIONING / "sample.py", use_sf, modules=modules, argv=[
            "--image", "data/images/0.png", "--encoder_path", "models/encoder-2-6.ckpt",
            "--decoder_path", "models/decoder-2-6.ckpt", "--embed_size", "8", "--hidden_size", "16"])
        sentences.append(capsys.readouterr().out)
        shown.append(coco.SHOWN)
    assert len(shown[0]) == len(shown[1]) == 1 and np.array_equal(shown[0][0], shown[1][0])
    assert sentences[1] == sentences[0] and 1 <= len(sentences[0].split()) <= 20
