"""Public PyTorch programs, session 37 (programs-ag): generative models, self-supervised
learning and "from scratch" research code (``programs/research_ag``), each run as a script
on torch and, with its imports rewritten, on shardflow, from the same ``manual_seed``
(shardflow draws torch's numbers: docs/COMPAT.md "Random seeds"; no weight copying, no
shared draws), compared on every printed line. See ``test_public_programs.py`` and
docs/COMPAT.md, "Public programs".
"""

import gc
import re
import socket
import warnings

import numpy as np
import pytest

from .programs._harness import HERE, load_file, run_script
from .test_public_programs_more_af import _run
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

AG = "research_ag"


def _same_run(tmp_path, monkeypatch, capsys, name, argv=(), lines=None, **tolerance):
    """Run ``programs/research_ag/<name>.py``; the printouts and warnings agree, and the
    torch run printed ``lines`` lines (so that a test cannot pass on an empty run)."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(
        tmp_path, monkeypatch, capsys, f"{AG}/{name}.py", argv=argv)
    assert sf_warned == th_warned
    if lines is not None:
        assert len(th_out) == lines, "\n".join(th_out)
    same_printout(sf_out, th_out, **tolerance)
    return th_out, sf_out


def _run_with_siblings(tmp_path, monkeypatch, capsys, path, siblings, argv=(), files=None, seed=0,
                       warn_always=False, only=None):
    """``_run`` for a script that imports sibling files of its repository (``from made import
    MADE``): each run gets the siblings loaded for its own framework (``siblings``:
    ``{module name: file under programs/}``). ``warn_always``: each run under its framework's
    ``set_warn_always(True)``, so that torch's once-per-process warnings are given whatever
    ran before in this process. ``only``: run on torch (False) or shardflow (True) alone."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        if only is not None and use_sf != only:
            continue
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir(parents=True)
        for name, data in (files or {}).items():
            (where / name).write_bytes(data)
        monkeypatch.chdir(where)
        modules = {name: load_file(HERE / file, use_sf, f"{name}_{'sf' if use_sf else 'th'}")
                   for name, file in siblings.items()}
        lib.manual_seed(seed)
        np.random.seed(seed)
        gc.collect()  # the earlier runs' garbage, and its ResourceWarnings, before recording
        lib.set_warn_always(warn_always)
        grad_enabled = lib.is_grad_enabled()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                run_script(HERE / path, use_sf, argv=argv, modules=modules)
        finally:
            lib.set_warn_always(False)
            lib.set_grad_enabled(grad_enabled)  # made's run.py leaves it off (torch.set_grad_enabled(False))
        # a ResourceWarning (a file the program left open) comes when the garbage collector
        # gets to it, in whichever run that is: not the framework's
        messages = [re.sub(r" \(Triggered internally at [^)]*\)$", "", f"{w.category.__name__}: {w.message}")
                    for w in caught if not issubclass(w.category, ResourceWarning)]
        runs.append((capsys.readouterr().out.splitlines(), messages))
    return runs


def test_efficient_kan_like_torch(tmp_path, monkeypatch, capsys):
    """Blealtan/efficient-kan's ``KANLinear``/``KAN``: B-spline bases built by comparison and
    the Cox-de Boor recursion, ``curve2coeff`` through ``torch.linalg.lstsq`` on an
    underdetermined batch (6 points, 8 coefficients: torch's gelsy minimum-norm answer),
    ``update_grid`` (``sort``, ``linspace(dtype=int64)`` indices, ``concatenate``, buffer
    ``copy_``) every 5 steps, ``regularization_loss``; AdamW with ExponentialLR on a toy
    regression. Every line agrees: the model's repr, the grids, 12 steps' losses and lr, the
    trained spline weights and predictions."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "efficient_kan", lines=26)
    assert sum(line.startswith("step ") for line in th_out) == 12


def test_mixture_of_experts_like_torch(tmp_path, monkeypatch, capsys):
    """davidmrau/mixture-of-experts: noisy top-k gating (``randn_like`` noise, ``softplus``
    noise scale, ``topk``, ``scatter`` into ``zeros_like(requires_grad=True)``), the load
    estimate through ``Normal(mean, std).cdf`` and ``gather`` on flattened top values,
    ``cv_squared`` importance/load losses, and the ``SparseDispatcher`` (``nonzero().sort(0)``,
    ``split``, ``gather``, ``index_add`` into a leaf). 4 Adam steps, then the eval-mode
    dispatch and evaluation. Every line agrees, including the dispatcher's batch index order:
    ``sort(0)`` of the (sample, expert) pairs leaves the equal experts' samples in the order
    torch's CPU ``std::sort`` does (it printed them in a stable order before)."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "moe", lines=22)
    assert th_out[9].startswith("batch index: [1, 4, 2, 0, 3")  # not the stable order


def test_made_autoregressive_check_like_torch(tmp_path, monkeypatch, capsys):
    """karpathy/pytorch-made's ``made.py`` self-test: ``MaskedLinear`` masks set by
    ``mask.data.copy_(torch.from_numpy(uint8_mask.T))`` (a transposed, non-contiguous NumPy
    array, cast into a float buffer), seven MADE configurations (natural and random orders,
    ``nout`` a multiple of ``nin``), one backward per output through ``Variable(...,
    requires_grad=True)`` and the inputs with a nonzero gradient. Every line agrees (the
    dependency lists and OK/NOTOK: the masks are NumPy's, the gradients shardflow's)."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "made", lines=7 + 10 * 5 + 20 + 30)
    assert all(line.endswith(": OK") for line in th_out if line.startswith("output"))


def _binarized(train=300, valid=200, dims=20, seed=0) -> bytes:
    """A ``binarized_mnist.npz``-shaped file: float32 0/1 ``train_data`` and ``valid_data``,
    each pixel on with its own probability."""
    import io

    rng = np.random.default_rng(seed)
    p = rng.random(dims)
    out = io.BytesIO()
    np.savez(out, train_data=(rng.random((train, dims)) < p).astype(np.float32),
             valid_data=(rng.random((valid, dims)) < p).astype(np.float32))
    return out.getvalue()


def test_made_training_run_like_torch(tmp_path, monkeypatch, capsys):
    """karpathy/pytorch-made's ``run.py``: a MADE with two hidden layers trained with
    connectivity-agnostic mask resampling (2 masks, resampled every 2 steps, 2 samples
    averaged at test time), ``torch.set_grad_enabled(split == 'train')`` as a call,
    ``xbhat += model(xb)`` into ``zeros_like``, the legacy ``size_average=False`` BCE-with-
    logits, Adam with weight decay and ``scheduler.step(epoch)`` (the deprecated epoch
    argument); parameters counted by ``np.prod(p.size())``. Every line and every warning
    (the legacy-reduction and scheduler deprecation warnings, in order) agree."""
    (th_out, th_warned), (sf_out, sf_warned) = _run_with_siblings(
        tmp_path, monkeypatch, capsys, f"{AG}/made_run.py", {"made": f"{AG}/made.py"},
        argv=["-d", "binarized_mnist.npz", "-q", "32,32", "-n", "2", "-r", "2", "-s", "2"],
        files={"binarized_mnist.npz": _binarized()})
    assert len(th_out) == 13 and th_out[1] == "number of model parameters: 2388"
    assert sf_warned == th_warned and len(th_warned) == 21
    same_printout(sf_out, th_out)


def test_normalizing_flows_like_torch(tmp_path, monkeypatch, capsys):
    """karpathy/pytorch-normalizing-flows (``nflib``, the ``nflib1.ipynb`` training cells):
    RealNVP (``AffineHalfFlow``, strided halves) on a Logistic prior built as
    ``TransformedDistribution(Uniform(0, 1), SigmoidTransform().inv)``; MAF (MADE-masked
    ``ARMLP``, ``flip``, a sequential inverse writing ``x[:, i]``) on ``MultivariateNormal``;
    the neural-spline coupling flow (``unconstrained_RQS``: ``F.pad`` then in-place edge
    writes, boolean-mask assignment of a tuple of graph tensors, the ``+= eps`` searchsorted,
    ``gather``) with ``ActNorm``'s data-dependent init (``.data =``) and ``Invertible1x1Conv``
    (``orthogonal_``, ``Tensor.lu`` and its deprecation warning, ``lu_unpack``, ``inverse``).
    40 Adam steps each, the prior's and the flow's samples (``prior.sample``: torch's draws
    from the same seed), and a forward/backward round trip. Every line and warning agree
    (under ``set_warn_always(True)``: ``torch.lu``'s warning once per layer; without it torch
    gives it once per process, and so does shardflow: ``tests/ops/test_linalg_lu.py``)."""
    (th_out, th_warned), (sf_out, sf_warned) = _run_with_siblings(
        tmp_path, monkeypatch, capsys, f"{AG}/nflib_train.py", {"nflib": f"{AG}/nflib.py"},
        warn_always=True)
    assert len(th_out) == 1 + 3 * 10, "\n".join(th_out)
    assert sf_warned == th_warned and len(th_warned) == 3
    same_printout(sf_out, th_out)


def test_siren_like_torch(tmp_path, monkeypatch, capsys):
    """vsitzmann/siren's ``explore_siren.ipynb``: ``SineLayer``'s custom ``uniform_`` init
    under ``no_grad`` (bounds from ``np.sqrt``), ``get_mgrid`` through ``torch.meshgrid``
    without ``indexing`` (torch's warning), a one-item ``DataLoader(pin_memory=True)``
    (torch's no-accelerator warning), ``coords.clone().detach().requires_grad_(True)``, the
    image gradient and laplacian by ``autograd.grad(create_graph=True)`` (one
    ``grad_outputs=ones_like`` per component), ``"%0.6f" % loss`` on a tensor that requires
    grad (torch's warning), ``forward_with_activations(retain_grad=True)`` keyed by
    ``str(layer.__class__)``, then the Poisson fit whose loss is a gradient (double
    backward through ``sin``). Every line and warning agree (under ``set_warn_always(True)``:
    torch gives these warnings once per process otherwise)."""
    (th_out, th_warned), (sf_out, sf_warned) = _run_with_siblings(
        tmp_path, monkeypatch, capsys, f"{AG}/siren.py", {}, warn_always=True)
    assert len(th_out) == 20, "\n".join(th_out)
    assert sf_warned == th_warned and any("meshgrid" in w for w in th_warned)
    same_printout(sf_out, th_out)


def test_simclr_like_torch(tmp_path, monkeypatch, capsys):
    """sthalles/SimCLR: ``info_nce_loss`` (``labels.unsqueeze(0) == labels.unsqueeze(1)``,
    ``F.normalize``, the diagonal dropped by ``[~mask].view``, positives and negatives by
    boolean indexing), ``torch.cuda.amp``'s ``GradScaler``/``autocast(enabled=False)`` (their
    FutureWarnings), Adam, the warm-up then ``CosineAnnealingLR`` logged through
    ``scheduler.get_lr()`` outside ``step`` (torch's warning and its chainable-form values),
    ``accuracy`` by ``topk``/``eq``/``expand_as``/``mul_``. Every line and warning agree:
    ``print(model)``, 6 steps' loss, top-1/top-5 and lr, and the final logits."""
    (th_out, th_warned), (sf_out, sf_warned) = _run_with_siblings(
        tmp_path, monkeypatch, capsys, f"{AG}/simclr.py", {}, warn_always=True)
    assert len(th_out) == 39, "\n".join(th_out)
    assert sf_warned == th_warned and any("get_last_lr" in w for w in th_warned)
    same_printout(sf_out, th_out)


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


_CLOCK = re.compile(r'"time": \d+')
_PORT = re.compile(r"127\.0\.0\.1:\d+")


def test_barlow_twins_like_torch(tmp_path, monkeypatch, capsys):
    """facebookresearch/barlowtwins ``main.py`` on a one-rank ``gloo`` group: the cross-
    correlation ``bn(z1).T @ bn(z2)`` of ``BatchNorm1d(affine=False)`` outputs, ``c.div_`` and
    ``torch.distributed.all_reduce(c)`` on a graph tensor, ``torch.diagonal(c).add_(-1)
    .pow_(2)`` (in-place on a view), ``off_diagonal``'s ``flatten()[:-1].view(n - 1, n + 1)``,
    DDP, LARS (``torch.where`` trust ratio, per-parameter ``mu`` state, weight-decay and
    adaptation filters by ``p.ndim``) with learning rates written into ``param_groups`` by
    the warm-up/cosine schedule, a ``DistributedSampler`` and ``set_epoch``, the
    ``torch.cuda.amp`` GradScaler/autocast without CUDA (their warnings; both disable
    themselves), ``json.dumps`` of the stats, the checkpoint and backbone saves. Every line
    (but the seconds) and every warning agree, the stats file too, and then each run's
    checkpoint loads into the other framework's model with the same values."""
    import torch

    import shardflow

    argv = ["data", "--workers", "0", "--epochs", "2", "--batch-size", "8", "--projector", "64-64-64",
            "--print-freq", "1", "--checkpoint-dir", "ck", "--dist-url", "tcp://127.0.0.1:PORT"]
    runs = []
    for use_sf in (False, True):
        runs.append(_run_with_siblings(tmp_path / ("sf" if use_sf else "th"), monkeypatch, capsys,
                                       f"{AG}/barlowtwins.py", {}, warn_always=True,
                                       argv=[a.replace("PORT", _free_port()) for a in argv],
                                       only=use_sf))
    (th_out, th_warned), (sf_out, sf_warned) = runs[0][0], runs[1][0]
    assert len(th_out) == 5, "\n".join(th_out)
    # torch's warning about its own dispatcher (no autograd kernel registered for c10d's
    # allreduce_, backpropagated through as the identity, as shardflow's all_reduce is)
    th_warned = [w for w in th_warned if "c10d::allreduce_: an autograd kernel" not in w]
    assert sf_warned == th_warned and any("CUDA is not available" in w for w in th_warned)
    # the first line echoes the arguments: each run had a port of its own
    same_printout([_CLOCK.sub("", _PORT.sub("", line)) for line in sf_out],
                  [_CLOCK.sub("", _PORT.sub("", line)) for line in th_out])
    th_dir, sf_dir = tmp_path / "th" / "th" / "ck", tmp_path / "sf" / "sf" / "ck"
    same_printout(_PORT.sub("", _CLOCK.sub("", (sf_dir / "stats.txt").read_text())).splitlines(),
                  _PORT.sub("", _CLOCK.sub("", (th_dir / "stats.txt").read_text())).splitlines(), what="stats.txt")
    th_ckpt = torch.load(th_dir / "checkpoint.pth", weights_only=False)
    sf_ckpt = shardflow.load(sf_dir / "checkpoint.pth", weights_only=False)
    assert th_ckpt["epoch"] == sf_ckpt["epoch"] == 2
    assert list(sf_ckpt["model"]) == list(th_ckpt["model"])
    for key, value in th_ckpt["model"].items():
        np.testing.assert_allclose(sf_ckpt["model"][key].numpy(), value.numpy(), rtol=1e-4, atol=1e-5, err_msg=key)
    assert sf_ckpt["optimizer"]["param_groups"] == th_ckpt["optimizer"]["param_groups"]


def test_vq_vae_2_like_torch(tmp_path, monkeypatch, capsys):
    """rosinality/vq-vae-2-pytorch ``vqvae.py`` with ``train_vqvae.py``'s loop: the two-level
    VQ-VAE's ``Quantize`` (squared distances by ``pow``/``@``, ``(-dist).max(1)``,
    ``F.one_hot(...).type(dtype)``, the EMA codebook updated through ``buffer.data.mul_().add_(
    alpha=)`` and ``.data.copy_``, the straight-through ``input + (quantize - input).detach()``,
    ``F.embedding`` on the transposed codebook), ResBlocks with ``out += input`` under in-place
    ReLUs, strided convolutions and transposed convolutions; the helpers of its
    ``distributed`` package without a group. Every line agrees: 5 steps' progress lines, the
    eval-mode samples, the cluster sizes, the codes and ``decode_code``."""
    (th_out, th_warned), (sf_out, sf_warned) = _run_with_siblings(
        tmp_path, monkeypatch, capsys, f"{AG}/vqvae.py", {"distributed": f"{AG}/vqvae_distributed.py"},
        warn_always=True)
    assert len(th_out) == 5 + 3 + 4 + 3, "\n".join(th_out)
    assert sf_warned == th_warned
    same_printout(sf_out, th_out)


def test_cyclegan_pix2pix_networks_like_torch(tmp_path, monkeypatch, capsys):
    """junyanz/pytorch-CycleGAN-and-pix2pix ``models/networks.py`` and ``util/image_pool.py``
    driven by the CycleGAN and pix2pix models' training steps: ``define_G``/``define_D``
    (``functools.partial`` norm layers, ``norm_layer.func == nn.InstanceNorm2d`` for the bias,
    ``init_weights`` through ``net.apply`` and the class name, normal/xavier/kaiming inits,
    ``print(net)`` and parameter counts), ResNet generators (reflection padding, transposed
    convolutions with ``output_padding``, instance norm without affine), the U-Net of
    skip-connection blocks (in-place LeakyReLU on the concatenated skip), PatchGAN and pixel
    discriminators, ``GANLoss`` lsgan/vanilla/wgangp (``register_buffer`` labels and
    ``expand_as``), ``ImagePool`` (Python's ``random``, ``image.data``), ``set_requires_grad``,
    Adam over ``itertools.chain``, the linear ``LambdaLR`` policy and ``ReduceLROnPlateau``
    stepped with a tensor, and ``cal_gradient_penalty`` (``autograd.grad(create_graph=True)``
    then backward). Every line and warning agree."""
    (th_out, th_warned), (sf_out, sf_warned) = _run_with_siblings(
        tmp_path, monkeypatch, capsys, f"{AG}/cyclegan_train.py", {"networks": f"{AG}/cyclegan_networks.py"},
        warn_always=True)
    assert sum(line.startswith("(epoch: ") for line in th_out) == 6 + 4, "\n".join(th_out)
    assert sf_warned == th_warned
    same_printout(sf_out, th_out)


def test_byol_like_torch(tmp_path, monkeypatch, capsys):
    """lucidrains/byol-pytorch with its README loop: the hidden layer's output caught by a
    forward hook (a bound method) on ``named_modules()['avgpool']``, the projector created on
    first use by the ``singleton`` decorator and moved by ``Module.to(tensor)``, the target
    encoder a ``copy.deepcopy`` of the online one (its copied hook writes into the copy),
    ``requires_grad = False`` on it, the EMA update by ``ma_params.data = ...``, ``loss_fn``
    by ``F.normalize``, ``chunk``, ``torch.save`` of the trained net. Every line and warning
    agree: the wrapper's repr, parameter counts, 5 losses, the hooks, the target weights,
    the embedding."""
    (th_out, th_warned), (sf_out, sf_warned) = _run_with_siblings(
        tmp_path, monkeypatch, capsys, f"{AG}/byol.py", {}, warn_always=True)
    assert sum(line.startswith("loss ") for line in th_out) == 5, "\n".join(th_out)
    assert sf_warned == th_warned
    same_printout(sf_out, th_out)
