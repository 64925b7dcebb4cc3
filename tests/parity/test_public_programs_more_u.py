"""eriklindernoren/PyTorch-GAN's implementations and aladdinpersson/Machine-Learning-Collection's
PyTorch basics and EfficientNet, each run as a script on torch and, with its imports rewritten, on
shardflow, from the same ``manual_seed`` (no weight copying, no shared draws: shardflow
draws torch's numbers, docs/COMPAT.md "Random seeds"), compared on every printed line and
on the final weights (see ``test_public_programs.py`` and docs/COMPAT.md, "Public
programs").

The GAN scripts draw their noise from NumPy's global generator (``np.random.normal``),
seeded alike before each run; their torchvision is ``programs/_torchvision_extras.py``
(synthetic MNIST, ``Resize``, ``save_image`` keeping the tensor). Sizes come from their own
command lines (``--n_epochs 1 --batch_size 8 ...``), so the GAN files are the originals.
"""

import numpy as np
import pytest

from .programs import _torchvision_extras
from .programs._harness import HERE, assert_close, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

SEED = 0


def _run_one(where, monkeypatch, capsys, use_sf, path, argv=(), sizes=None, seed=SEED, raises=None):
    """Run the script ``programs/<path>`` in ``where/<th|sf>/run/here`` (the GAN scripts make
    ``../../data/mnist``) on torch or shardflow after ``manual_seed(seed)`` and
    ``np.random.seed(seed)``. Returns ``(module, printed lines, saved images)``; with
    ``raises=(type, pattern)`` the script must fail so (the module is then its globals at
    that point)."""
    import torch

    import shardflow

    lib = shardflow if use_sf else torch
    here = where / ("sf" if use_sf else "th") / "run" / "here"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    lib.manual_seed(seed)
    np.random.seed(seed)
    modules = _torchvision_extras.torchvision_modules(lib, sizes)
    seen = []
    if raises is None:
        mod = run_script(HERE / path, use_sf, argv=list(argv), modules=modules)
    else:
        with pytest.raises(raises[0], match=raises[1]):
            run_script(HERE / path, use_sf, argv=list(argv), modules=modules, after_imports=seen.append)
        mod = seen[0]
    return mod, capsys.readouterr().out.splitlines(), dict(_torchvision_extras.SAVED)


def _run(tmp_path, monkeypatch, capsys, path, argv=(), sizes=None, seed=SEED, raises=None):
    """:func:`_run_one` on torch, then on shardflow: ``[(module, lines, saved), ...]``."""
    return [_run_one(tmp_path, monkeypatch, capsys, use_sf, path, argv, sizes, seed, raises) for use_sf in (False, True)]


def _same_state(sf_model, th_model, what, rtol=1e-5, atol=1e-6, adam_bound=0.0, zero_grad=()):
    """The two models' state dicts agree to ``rtol`` / ``atol``, but for elements whose
    gradient is of rounding size, held to ``adam_bound`` (the optimizer's largest step
    times the steps) instead: Adam's step ``lr * g / (|g| + eps)`` turns a gradient near or
    below eps = 1e-8, where the frameworks' float32 sums differ in their last bits, into a
    step anywhere up to ``lr`` (RMSprop's, up to 10 lr). Those are the entries named in ``zero_grad``, whose gradient is zero in
    exact arithmetic (a Linear's bias feeding a training-mode BatchNorm1d, which subtracts
    the batch mean -- 24% of gan.py's ``model.8.bias`` moved apart -- and that BatchNorm's
    ``running_mean``, whose batch means include the bias), and at most 10% of any other
    entry's elements (the step where a gradient was tiny is not recorded): e.g. aae.py's
    encoder's first Linear bias feeds a LeakyReLU, a Linear and a training BatchNorm1d;
    for a unit whose LeakyReLU takes the same slope on all 8 images the BatchNorm's
    batch-mean subtraction makes its gradient exactly zero, measured 28 of 512 (|g| <
    1e-8, median 7.9e-4) in the first step, 27 of them ending apart. Also measured:
    gan.py's BatchNorm1d(512) bias, element 144, had a first-step gradient of 3.7e-9 (a cancelling sum of ~1e-5
    terms) and ends 2.5e-6 apart after 3 steps of lr 2e-4; dcgan.py's last strided conv
    bias (a 1x1 output into BatchNorm2d over 4 images) 1.1e-5 apart in 4 of 128 elements,
    where its gradient is 4e-10 (the median is 2.9e-6). Everything else agrees to rtol 1e-5."""
    th_state, sf_state = th_model.state_dict(), sf_model.state_dict()
    assert list(sf_state) == list(th_state), what
    for k, v in th_state.items():
        sf_v, th_v = sf_state[k].numpy().astype(np.float64), v.numpy().astype(np.float64)
        far = np.abs(sf_v - th_v) > atol + rtol * np.abs(th_v)
        assert k in zero_grad or far.mean() <= 0.1, (what, k, int(far.sum()), far.size)
        assert_close(sf_v[far], th_v[far], f"{what} {k} (rounding-size gradients)", 0, adam_bound)
        assert_close(sf_v[~far], th_v[~far], f"{what} {k}", rtol, atol)


BEFORE_BATCHNORM = ("model.2.bias", "model.5.bias", "model.8.bias",
                    "model.3.running_mean", "model.6.running_mean", "model.9.running_mean")


@pytest.mark.parametrize("name, argv, n_train, printed, sampled, step_bound", [
    ("gan", ["--batch_size", "8"], 24, 3, 8, 2e-4),
    ("wgan_gp", ["--batch_size", "8", "--n_critic", "2"], 32, 2, 8, 2e-4),
    ("cgan", ["--batch_size", "8", "--img_size", "16"], 16, 2, 100, 2e-4),
    ("wgan", ["--batch_size", "8", "--n_critic", "2"], 24, 2, 8, 10 * 5e-5),
    ("aae", ["--batch_size", "8", "--img_size", "16"], 16, 2, 100, 2e-4),
])
def test_pytorch_gan_mlp_like_torch(tmp_path, monkeypatch, capsys, name, argv, n_train, printed, sampled, step_bound):
    """PyTorch-GAN's MLP GANs, one epoch of a tiny synthetic MNIST each, from the same seed:
    ``gan.py`` (BCELoss on a Sigmoid discriminator; ``Variable``, ``Tensor(n, 1).fill_``,
    ``imgs.type(torch.FloatTensor)``, ``torch.FloatTensor`` of NumPy float64 noise,
    BatchNorm1d(n, 0.8) -- its eps given positionally -- and in-place LeakyReLU),
    ``wgan_gp.py`` (the gradient penalty: ``autograd.grad(create_graph=True,
    retain_graph=True, only_inputs=True)`` of the critic at interpolates made
    ``requires_grad_``, ``gradients.norm(2, dim=1)``, backward through it; the generator
    every ``n_critic`` steps), ``cgan.py`` (``nn.Embedding`` of the labels concatenated to
    the noise and to the flattened image, ``Dropout(0.4)`` -- masks from the same seed,
    torch's --, MSELoss, ``LongTensor(np.random.randint(...))``, ``labels.type(LongTensor)``,
    a 100-image ``sample_image`` at batch 0; MNIST resized 28 -> 16 by PIL), ``wgan.py``
    (RMSprop, the critic's weights clipped with ``p.data.clamp_``) and ``aae.py`` (an
    encoder's reparameterization ``exp(logvar / 2)`` with NumPy noise, L1Loss + BCELoss,
    an Adam over ``itertools.chain`` of encoder and decoder). Every printed line (losses
    with ``%f``: atol 1e-6, a last digit) and every ``save_image``'d tensor (atol 1e-5) are torch's;
    the trained models agree to rtol 1e-5, but for elements whose gradient is of rounding
    size (``_same_state``: bounded by the optimizer's largest step times the steps; RMSprop's
    first step is ``lr / sqrt(1 - alpha)`` = 10 lr)."""
    (th, th_out, th_saved), (sf, sf_out, sf_saved) = _run(
        tmp_path, monkeypatch, capsys, f"pytorch_gan/{name}.py", ["--n_epochs", "1", *argv], {"train": n_train})
    assert sum(line.startswith("[Epoch 0/1]") for line in th_out) == printed, th_out
    same_printout(sf_out, th_out, rtol=1e-5, atol=1e-6, what=name)
    assert list(sf_saved) == list(th_saved) == ["images/0.png"]
    assert th_saved["images/0.png"].shape[0] == sampled
    # after one optimizer step (its rounding-size steps: see _same_state); measured 3.8e-6
    # at most, aae's decoder, in 28 of 25600 pixels near 0
    assert_close(sf_saved["images/0.png"], th_saved["images/0.png"], f"{name} saved images", rtol=1e-5, atol=1e-5)
    steps = n_train // 8
    models = ("encoder", "decoder", "discriminator") if name == "aae" else ("generator", "discriminator")
    for model in models:
        _same_state(getattr(sf, model), getattr(th, model), f"{name} {model}", adam_bound=step_bound * steps,
                    zero_grad=() if model == "discriminator" else BEFORE_BATCHNORM)


def test_pytorch_gan_softmax_gan_fails_as_torch(tmp_path, monkeypatch, capsys):
    """PyTorch-GAN's ``softmax_gan.py`` as written cannot run on torch >= 1.5: it calls
    ``d_loss.backward(retain_graph=True)``, then ``optimizer_D.step()`` (Adam updates the
    discriminator's weights in place), then ``g_loss.backward()`` through the same graph,
    whose Linear saved those weights. torch raises "one of the variables needed for
    gradient computation has been modified by an inplace operation" at that backward; so
    does shardflow (its version counters see the optimizer's in-place update), after the
    same printout (the options line)."""
    (th, th_out, _), (sf, sf_out, _) = _run(
        tmp_path, monkeypatch, capsys, "pytorch_gan/softmax_gan.py", ["--n_epochs", "1", "--batch_size", "8"],
        {"train": 8}, raises=(RuntimeError, "needed for gradient computation has been modified by an inplace operation"))
    assert len(th_out) == 1 and th_out[0].startswith("Namespace(n_epochs=1")
    assert sf_out == th_out
    assert_close(sf.d_loss.item(), th.d_loss.item(), "softmax_gan d_loss")


def test_pytorch_gan_dcgan_like_torch(tmp_path, monkeypatch, capsys):
    """PyTorch-GAN's ``dcgan.py`` at ``--img_size 16`` (its generator: Linear, then
    ``nn.Upsample(scale_factor=2)``, 3x3 convs, BatchNorm2d(n, 0.8), in-place LeakyReLU,
    Tanh; its discriminator: strided convs, ``Dropout2d(0.25)`` -- masks from the same
    seed, torch's --, BatchNorm2d, a Sigmoid head), ``weights_init_normal`` through
    ``model.apply`` (``normal_`` / ``constant_`` on ``.weight.data``), BCELoss. One epoch
    of 8 images in batches of 4, from the same seed: every printed line and the
    ``save_image``'d batch are torch's, the models agree as in the MLP GANs' test."""
    (th, th_out, th_saved), (sf, sf_out, sf_saved) = _run(
        tmp_path, monkeypatch, capsys, "pytorch_gan/dcgan.py",
        ["--n_epochs", "1", "--batch_size", "4", "--img_size", "16"], {"train": 8})
    assert sum(line.startswith("[Epoch 0/1]") for line in th_out) == 2, th_out
    same_printout(sf_out, th_out, rtol=1e-5, atol=1e-6, what="dcgan")
    assert list(sf_saved) == list(th_saved) == ["images/0.png"]
    assert_close(sf_saved["images/0.png"], th_saved["images/0.png"], "dcgan saved images")
    _same_state(sf.generator, th.generator, "dcgan generator", adam_bound=2e-4 * 2)
    _same_state(sf.discriminator, th.discriminator, "dcgan discriminator", adam_bound=2e-4 * 2)


def test_ml_collection_init_weights_printout_like_torch(tmp_path, monkeypatch, capsys):
    """aladdinpersson/Machine-Learning-Collection ``pytorch_init_weights.py`` as a script: a
    CNN whose ``initialize_weights`` walks ``self.modules()`` with ``isinstance`` checks,
    ``kaiming_uniform_`` the conv and Linear weights, ``constant_`` the biases; then
    ``print(param)`` of every parameter. From the same seed every printed line is torch's,
    character for character: ``Parameter containing:``, 4-d tensors with their blank-line
    nesting, the 10x784 weight summarized with ``...`` rows and columns, ``requires_grad=True``
    on its own line."""
    (th, th_out, _), (sf, sf_out, _) = _run(tmp_path, monkeypatch, capsys, "ml_collection/pytorch_init_weights.py")
    assert th_out.count("Parameter containing:") == 6 and any("...," in line for line in th_out)
    assert sf_out == th_out


def test_ml_collection_std_mean_like_torch(tmp_path, monkeypatch, capsys):
    """``pytorch_std_mean.py`` as a script: a tqdm progress bar over a shuffled CIFAR-10
    ``DataLoader`` (the stand-in's 100 synthetic images, 2 batches of 64 and 36),
    ``torch.mean(data, dim=[0, 2, 3])`` (a list of dims) accumulated onto the int ``0``,
    ``** 0.5``; the printed mean and std tensors are torch's, digit for digit."""
    (th, th_out, _), (sf, sf_out, _) = _run(tmp_path, monkeypatch, capsys, "ml_collection/pytorch_std_mean.py",
                                           sizes={"train": 100})
    assert len(th_out) == 2 and th_out[0].startswith("tensor([0.")
    assert sf_out == th_out
    assert_close(sf.std.numpy(), th.std.numpy(), "std", rtol=1e-6, atol=0)


def test_ml_collection_lr_ratescheduler_like_torch(tmp_path, monkeypatch, capsys):
    """``pytorch_lr_ratescheduler.py`` as a script (batch 8, 11 epochs of 24 images):
    ``ReduceLROnPlateau(optimizer, factor=0.1, patience=5)`` stepped with each epoch's mean
    loss (a Python float), Adam at lr 0.1, the mean loss printed with all its digits (rtol
    1e-5: 17-digit floats of float32 sums). Its ``check_accuracy`` feeds the unflattened
    images to the MLP -- the program's own bug: torch raises ``RuntimeError: mat1 and mat2
    shapes cannot be multiplied (224x28 and 784x50)``, and so does shardflow (its message
    adds the fix). The scheduler's state is torch's, the trained weights agree to 2e-4
    (Adam at lr 0.1: see the test). As written the
    scheduler also had ``verbose=True``, which torch 2.13 no longer takes: both refuse it
    with a TypeError."""
    import torch

    import shardflow

    for lib in (torch, shardflow):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=0.1)
        with pytest.raises(TypeError, match="verbose"):
            lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.1, patience=5, verbose=True)
    (th, th_out, _), (sf, sf_out, _) = _run(
        tmp_path, monkeypatch, capsys, "ml_collection/pytorch_lr_ratescheduler.py", sizes={"train": 24},
        raises=(RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(224x28 and 784x50\)"))
    assert len(th_out) == 11 and th_out[0].startswith("Cost at epoch 1 is ")
    same_printout(sf_out, th_out, rtol=1e-5, atol=0, what="lr_ratescheduler")
    th_sched, sf_sched = th.scheduler.state_dict(), sf.scheduler.state_dict()
    assert sorted(sf_sched) == sorted(th_sched)
    for k in ("num_bad_epochs", "last_epoch", "cooldown_counter", "_last_lr", "patience", "factor"):
        assert sf_sched[k] == th_sched[k], k
    assert_close(sf_sched["best"], th_sched["best"], "best", rtol=1e-5, atol=0)
    # Adam at the program's lr 0.1 throws the loss up to 58 in the first epoch; float32
    # rounding differences grow over the 33 steps: measured 9.5e-5 at most (weights up to 1.1)
    _same_state(sf.model, th.model, "lr_ratescheduler model", rtol=0, atol=2e-4)


def test_ml_collection_rnn_gru_lstm_like_torch(tmp_path, monkeypatch, capsys):
    """``pytorch_rnn_gru_lstm.py`` as a script (hidden 16, batch 8, one epoch of 16 images):
    the 28 image rows as a sequence through a 2-layer ``nn.LSTM(batch_first=True)`` from
    ``(h0, c0)`` zeros moved ``.to(device)``, every step's output flattened into a Linear,
    Adam, a tqdm bar over the loader; then ``check_accuracy`` returns ``num_correct /
    num_samples`` (a 0-d tensor divided by an int) printed with ``f"{acc*100:2f}"`` and
    ``:.2f`` -- a tensor's ``__format__``. From the same seed the printout is torch's,
    digit for digit, and the trained LSTM and Linear agree to 1e-5 (RNN and GRU, defined
    beside it, are unused, as written)."""
    (th, th_out, _), (sf, sf_out, _) = _run(tmp_path, monkeypatch, capsys, "ml_collection/pytorch_rnn_gru_lstm.py",
                                           sizes={"train": 16, "test": 8})
    assert len(th_out) == 2 and th_out[0].startswith("Accuracy on training set: ")
    assert sf_out == th_out
    _same_state(sf.model, th.model, "rnn_gru_lstm model", adam_bound=0.005 * 2)


def test_ml_collection_mixed_precision_cpu_like_torch(tmp_path, monkeypatch, capsys):
    """``pytorch_mixed_precision_example.py`` on the CPU (widths 8 and 16, batch 8, one
    epoch of 24 images): ``torch.cuda.amp.GradScaler()`` and ``torch.cuda.amp.autocast()``
    without CUDA are deprecated (FutureWarning) and turn themselves off (UserWarning), in
    both frameworks, so ``scaler.scale(loss).backward()`` / ``scaler.step`` / ``update`` are
    plain float32 steps. Both accuracy lines (an f-string of a tensor count) are torch's and
    the trained CNN agrees to 1e-5."""
    with pytest.warns(FutureWarning, match=r"cuda\.amp\.GradScaler\(args\.\.\.\)` is deprecated"), \
            pytest.warns(FutureWarning, match=r"cuda\.amp\.autocast\(args\.\.\.\)` is deprecated"), \
            pytest.warns(UserWarning, match="GradScaler.*is enabled, but CUDA is not available.  Disabling"):
        (th, th_out, _), (sf, sf_out, _) = _run(
            tmp_path, monkeypatch, capsys, "ml_collection/pytorch_mixed_precision_example.py",
            sizes={"train": 24, "test": 8})
    assert len(th_out) == 2 and th_out[0].startswith("Got ") and th_out[1].startswith("Got ")
    assert sf_out == th_out
    _same_state(sf.model, th.model, "mixed_precision model", adam_bound=1e-3 * 3)


def test_ml_collection_loadsave_like_torch(tmp_path, monkeypatch, capsys):
    """``pytorch_loadsave.py`` as a script: ``torchvision.models.vgg16(pretrained=False)`` (the
    stand-in VGG; torchvision's deprecation warning), an Adam over it, the checkpoint dict
    of ``model.state_dict()`` and ``optimizer.state_dict()`` saved, then read back with
    ``torch.load`` into both. The printout is torch's; the file each framework wrote loads
    back to the model's values and the optimizer's (empty) state and param groups; and the
    file has the permissions torch gives it (shardflow's were 0o600: see
    ``tests/checkpoint/test_save_file_mode.py``)."""
    import os
    import stat

    with pytest.warns(UserWarning, match="The parameter 'pretrained' is deprecated"):
        (th, th_out, _), (sf, sf_out, _) = _run(tmp_path, monkeypatch, capsys, "ml_collection/pytorch_loadsave.py")
    assert th_out == sf_out == ["=> Saving checkpoint", "=> Loading checkpoint"]
    import torch

    import shardflow

    files = {lib: tmp_path / name / "run" / "here" / "my_checkpoint.pth.tar" for lib, name in ((torch, "th"), (shardflow, "sf"))}
    modes = {lib: stat.S_IMODE(os.stat(f).st_mode) for lib, f in files.items()}
    assert modes[shardflow] == modes[torch], modes
    th_ckpt, sf_ckpt = torch.load(files[torch]), shardflow.load(files[shardflow])
    assert list(sf_ckpt) == list(th_ckpt) == ["state_dict", "optimizer"]
    assert list(sf_ckpt["state_dict"]) == list(th_ckpt["state_dict"])
    assert sf_ckpt["optimizer"]["state"] == th_ckpt["optimizer"]["state"] == {}
    assert sf_ckpt["optimizer"]["param_groups"] == th_ckpt["optimizer"]["param_groups"]


def test_pytorch_gan_cyclegan_utils_like_torch(tmp_path, monkeypatch):
    """PyTorch-GAN's ``cyclegan/utils.py`` as cyclegan.py uses it: a ``ReplayBuffer(max_size=6)``
    fed 5 batches of 3 generated images (``for element in data.data``, ``torch.unsqueeze``,
    ``clone()`` of a stored image, ``torch.cat``; the swaps from Python's ``random``, seeded
    alike), and ``torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=LambdaLR(n_epochs,
    offset, decay_start_epoch).step)`` over an Adam stepped for 8 epochs (linear decay from
    epoch 4 to 0). Every popped batch and every epoch's lr are torch's."""
    import random

    import torch

    import shardflow

    results = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        monkeypatch.chdir(tmp_path)
        utils = run_script(HERE / "pytorch_gan" / "cyclegan" / "utils.py", use_sf, as_main=False,
                           modules=_torchvision_extras.torchvision_modules(lib))
        random.seed(SEED)
        lib.manual_seed(SEED)
        buffer = utils.ReplayBuffer(max_size=6)
        popped = [buffer.push_and_pop(lib.randn(3, 1, 4, 4, requires_grad=True) * 2).numpy().copy() for _ in range(5)]
        assert not buffer.data[0].requires_grad  # ``data.data``: the stored images are detached
        weight = lib.nn.Parameter(lib.ones(2))
        optimizer = lib.optim.Adam([weight], lr=0.0002, betas=(0.5, 0.999))
        scheduler = lib.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=utils.LambdaLR(8, 0, 4).step)
        lrs = []
        for _ in range(8):
            optimizer.step()
            scheduler.step()
            lrs.append(optimizer.param_groups[0]["lr"])
        results.append((popped, lrs, scheduler.get_last_lr()))
    (th_popped, th_lrs, th_last), (sf_popped, sf_lrs, sf_last) = results
    for i, (a, b) in enumerate(zip(sf_popped, th_popped, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"popped batch {i}")
    assert sf_lrs == th_lrs and sf_last == th_last
    assert th_lrs[0] == 0.0002 and th_lrs[-1] == 0.0


def test_ml_collection_efficientnet_like_torch(tmp_path, monkeypatch, capsys):
    """``CNN_architectures/pytorch_efficientnet.py`` as a script (its ``test()`` on 2 images of
    32x32, not 224x224): EfficientNet-b0 as written -- depthwise convs (``groups=hidden_dim``,
    up to 1152 groups), SiLU, squeeze-excitation (``AdaptiveAvgPool2d(1)``, 1x1 convs,
    Sigmoid), stochastic depth from ``torch.rand(...) < survival_prob`` in training, Dropout
    -- printing the output's ``torch.Size``. Then, from ``manual_seed(1)``, a new b0 trained
    2 SGD steps (momentum 0.9) on 4 images of 48x48 (the last BatchNorms normalize 2x2 maps
    over 4 images; at 32x32 with 2 images they normalize 2 values per channel, which turns
    float32 rounding into O(1) differences, in torch itself): the initial weights bitwise
    (torch's draws), both losses to rtol 1e-5, the trained state (weights, running
    statistics) to rtol 1e-4 or atol 2e-5 (measured: 1.1e-5 at most, a weight of
    -0.0095 in features.2's projection, moved by lr 0.05 times a gradient that is a
    cancelling sum through BatchNorm and the squeeze-excitation gate)."""
    import torch

    import shardflow

    runs = _run(tmp_path, monkeypatch, capsys, "ml_collection/cnn_architectures/pytorch_efficientnet.py")
    (th, th_out, _), (sf, sf_out, _) = runs
    assert th_out == ["torch.Size([2, 10])"]
    same_printout(sf_out, th_out, rtol=0, atol=0, what="efficientnet test()")
    results = []
    for (mod, _, _), lib in zip(runs, (torch, shardflow), strict=True):
        lib.manual_seed(1)
        model = mod.EfficientNet("b0", 10)
        initial = {k: v.numpy().copy() for k, v in model.state_dict().items()}
        optimizer = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x, y = lib.randn(4, 3, 48, 48), lib.tensor([1, 7, 3, 0])
        losses = []
        for _ in range(2):
            optimizer.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        results.append((model, initial, losses))
    (th_model, th_init, th_losses), (sf_model, sf_init, sf_losses) = results
    assert list(sf_init) == list(th_init)
    for k, v in th_init.items():
        np.testing.assert_array_equal(sf_init[k], v, err_msg=f"initial {k}")
    assert_close(sf_losses, th_losses, "efficientnet losses", rtol=1e-5, atol=0)
    _same_state(sf_model, th_model, "efficientnet", rtol=1e-4, atol=2e-5)
