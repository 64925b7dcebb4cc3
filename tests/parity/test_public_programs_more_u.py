"""eriklindernoren/PyTorch-GAN's implementations and aladdinpersson/Machine-Learning-Collection's
PyTorch basics, each run as a script on torch and, with its imports rewritten, on
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


def _run(tmp_path, monkeypatch, capsys, path, argv=(), sizes=None, seed=SEED):
    """Run the script ``programs/<path>`` in ``tmp_path/<th|sf>/run/here`` (the GAN scripts
    make ``../../data/mnist``) on torch then shardflow, each after ``manual_seed(seed)`` and
    ``np.random.seed(seed)``. Returns ``[(module, printed lines, saved images), ...]``."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th") / "run" / "here"
        where.mkdir(parents=True)
        monkeypatch.chdir(where)
        lib.manual_seed(seed)
        np.random.seed(seed)
        modules = _torchvision_extras.torchvision_modules(lib, sizes)
        mod = run_script(HERE / path, use_sf, argv=list(argv), modules=modules)
        runs.append((mod, capsys.readouterr().out.splitlines(), dict(_torchvision_extras.SAVED)))
    return runs


def _same_state(sf_model, th_model, what, rtol=1e-5, atol=1e-6, adam_bound=0.0, zero_grad=()):
    """The two models' state dicts agree to ``rtol`` / ``atol``, but for elements whose
    gradient is of rounding size, held to ``adam_bound`` (Adam's lr times the steps)
    instead: Adam's step ``lr * g / (|g| + eps)`` turns a gradient near or below eps = 1e-8,
    where the frameworks' float32 sums differ in their last bits, into a step anywhere up
    to ``lr``. Those are the entries named in ``zero_grad``, whose gradient is zero in
    exact arithmetic (a Linear's bias feeding a training-mode BatchNorm1d, which subtracts
    the batch mean -- 24% of gan.py's ``model.8.bias`` moved apart -- and that BatchNorm's
    ``running_mean``, whose batch means include the bias), and at most 5% of any other
    entry's elements (the step where a gradient was tiny is not recorded). Measured: gan.py's BatchNorm1d(512)
    bias, element 144, had a first-step gradient of 3.7e-9 (a cancelling sum of ~1e-5
    terms) and ends 2.5e-6 apart after 3 steps of lr 2e-4; dcgan.py's last strided conv
    bias (a 1x1 output into BatchNorm2d over 4 images) 1.1e-5 apart in 4 of 128 elements,
    where its gradient is 4e-10 (the median is 2.9e-6). Everything else agrees to rtol 1e-5."""
    th_state, sf_state = th_model.state_dict(), sf_model.state_dict()
    assert list(sf_state) == list(th_state), what
    for k, v in th_state.items():
        sf_v, th_v = sf_state[k].numpy().astype(np.float64), v.numpy().astype(np.float64)
        far = np.abs(sf_v - th_v) > atol + rtol * np.abs(th_v)
        assert k in zero_grad or far.mean() <= 0.05, (what, k, int(far.sum()), far.size)
        assert_close(sf_v[far], th_v[far], f"{what} {k} (rounding-size gradients)", 0, adam_bound)
        assert_close(sf_v[~far], th_v[~far], f"{what} {k}", rtol, atol)


GAN_LINE = "[Epoch 0/1] [Batch {}/{}] [D loss: "


@pytest.mark.parametrize("name, argv, n_train, printed", [
    ("gan", ["--batch_size", "8"], 24, 3),
    ("wgan_gp", ["--batch_size", "8", "--n_critic", "2"], 32, 2),
])
def test_pytorch_gan_mlp_like_torch(tmp_path, monkeypatch, capsys, name, argv, n_train, printed):
    """PyTorch-GAN's ``gan.py`` (BCELoss on a Sigmoid discriminator; ``Variable``,
    ``Tensor(n, 1).fill_``, ``imgs.type(torch.FloatTensor)``, ``torch.FloatTensor`` of
    NumPy float64 noise, BatchNorm1d(n, 0.8) -- its eps given positionally -- and in-place
    LeakyReLU) and ``wgan_gp.py`` (the gradient penalty: ``autograd.grad(create_graph=True,
    retain_graph=True, only_inputs=True)`` of the critic at interpolates made
    ``requires_grad_``, ``gradients.norm(2, dim=1)``, backward through it; the generator
    every ``n_critic`` steps), one epoch of a tiny synthetic MNIST, from the same seed. Every
    printed line (losses with ``%f``: atol 1e-6, a last digit) and ``save_image``'s tensor
    are torch's; the trained generator and discriminator agree to rtol 1e-5, but for
    elements whose gradient is of rounding size (``_same_state``: bounded by Adam's lr
    times the steps)."""
    (th, th_out, th_saved), (sf, sf_out, sf_saved) = _run(
        tmp_path, monkeypatch, capsys, f"pytorch_gan/{name}.py", ["--n_epochs", "1", *argv], {"train": n_train})
    assert sum(line.startswith("[Epoch 0/1]") for line in th_out) == printed, th_out
    same_printout(sf_out, th_out, rtol=1e-5, atol=1e-6, what=name)
    assert list(sf_saved) == list(th_saved) == ["images/0.png"]
    assert_close(sf_saved["images/0.png"], th_saved["images/0.png"], f"{name} saved images")
    steps = n_train // 8
    before_batchnorm = ("model.2.bias", "model.5.bias", "model.8.bias",
                        "model.3.running_mean", "model.6.running_mean", "model.9.running_mean")
    _same_state(sf.generator, th.generator, f"{name} generator", adam_bound=2e-4 * steps, zero_grad=before_batchnorm)
    _same_state(sf.discriminator, th.discriminator, f"{name} discriminator", adam_bound=2e-4 * steps)



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
