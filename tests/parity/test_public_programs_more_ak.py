"""Public PyTorch programs, session 40 (compat-gen): generative, vision and quantization
programs (``programs/gen_s40``): minDiffusion's DDPM, the annotated-diffusion U-Net, VQ-VAE
codebooks and coupling flows, the QAT tutorial, CLIP / SimCLR contrastive losses and the
milesial U-Net, each run as a script on torch and, with its imports rewritten, on shardflow,
from the same ``manual_seed`` (shardflow draws torch's numbers: docs/COMPAT.md "Random
seeds"), compared on every printed line and warning. See docs/COMPAT.md, "Session 40
(compat-gen)".
"""

import pytest

from .test_public_programs_more_ai import _run, _without_once
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

GEN = "gen_s40"


def _same_run(tmp_path, monkeypatch, capsys, name, lines, **tolerance):
    """Run ``programs/gen_s40/<name>.py`` on both; printouts and warnings agree and torch's
    run printed ``lines`` lines. Returns torch's printout and warnings."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(
        tmp_path, monkeypatch, capsys, f"{GEN}/{name}.py")
    assert _without_once(sf_warned) == _without_once(th_warned)
    assert len(th_out) == lines, "\n".join(th_out)
    same_printout(sf_out, th_out, what=name, **tolerance)
    return th_out, th_warned


def test_min_diffusion_like_torch(tmp_path, monkeypatch, capsys):
    """cloneofsimo/minDiffusion: schedules registered as buffers in a loop, ``randint``
    timesteps divided by ``n_T`` (integer tensor true division), ``sqrtab[_ts, None, None,
    None]``, the 7x7 conv / BatchNorm / LeakyReLU eps model and the NaiveUnet
    (``ConvTranspose2d`` 2x2 and 4x4, ``AvgPool2d(4)``, GroupNorm, ``TimeSiren``), DDPM
    sampling under ``no_grad`` with ``torch.tensor(i / n_T).repeat(n, 1)``, and DDIM
    (eta 0 and 1). Every line agrees."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(
        tmp_path, monkeypatch, capsys, f"{GEN}/min_diffusion.py")
    assert sf_warned == th_warned == []
    assert len(th_out) == 15, "\n".join(th_out)
    # the sampled images: atol 1.5e-3. Each conv bias feeds a training-mode BatchNorm (the
    # dummy model) or a one-channel-per-group GroupNorm (the U-Net, GroupNorm(8, 8)), so its
    # gradient is 0 in exact arithmetic and Adam steps it on rounding noise, up to lr per
    # step (3 x 2e-4: 3.5e-4 apart was measured); in eval mode the BatchNorm's running mean
    # no longer cancels it. The U-Net's second loss too: its first gradient is ill-conditioned
    # (MaxPool2d near-ties after GroupNorm + ReLU: torch's own float32 and float64 input
    # gradients differ by 1.7% on such a batch; with n_T = 5 instead of 10 the two frameworks'
    # second losses were 1.7e-4 apart). The other training lines keep 1e-5.
    sampled = [i for i, line in enumerate(th_out)
               if any(w in line for w in (" sample ", " grid ", " ddim ", "unet step 1 "))]
    trained = [i for i in range(len(th_out)) if i not in sampled]
    same_printout([sf_out[i] for i in trained], [th_out[i] for i in trained], what="min_diffusion")
    same_printout([sf_out[i] for i in sampled], [th_out[i] for i in sampled], what="min_diffusion", atol=1.5e-3)


def test_annotated_diffusion_like_torch(tmp_path, monkeypatch, capsys):
    """The Annotated Diffusion Model (Hugging Face blog): weight-standardized convolutions
    (``partial(torch.var, unbiased=False)``, ``rsqrt``), GroupNorm + SiLU blocks with a
    scale-shift from ``chunk``, linear attention (two ``torch.einsum``, ``softmax`` over -2 and
    -1), full attention (``einsum`` imported from torch, ``amax(...).detach()``), nearest
    ``nn.Upsample``, space-to-depth downsampling, the four beta schedules (``torch.pi``,
    ``torch.clip``), ``F.pad(..., value=1.0)`` of the cumulative product, ``extract`` by
    ``a.gather(-1, t.cpu())``, huber / l1 / l2 losses, ``p_sample_loop`` collecting NumPy
    arrays. Every line agrees."""
    th_out, th_warned = _same_run(tmp_path, monkeypatch, capsys, "annotated_diffusion", lines=11)
    assert th_warned == []


def test_vq_codebooks_and_coupling_flows_like_torch(tmp_path, monkeypatch, capsys):
    """VQ-VAE codebooks (zalandoresearch's ``VectorQuantizerEMA`` with ``torch.cdist`` and a
    codebook ``nn.Parameter`` replaced every step; lucidrains-style in-place EMA buffers with
    ``mul_(...).add_(..., alpha=...)`` and ``F.one_hot``), the straight-through estimator,
    RealNVP with a ``MultivariateNormal`` prior and a ``requires_grad=False`` mask parameter,
    Glow's ActNorm (data-dependent init) and invertible 1x1 convolution (``linalg.qr``,
    ``slogdet`` of a double, ``logdet``, ``inverse``) under ``Normal.log_prob``. Every line
    agrees."""
    # atol: the 1x1 convolution's log-determinant is near 0 (an orthogonal start), a small
    # residual of float32 weights after Adam steps: 2e-6 apart was seen
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "vq_flows", lines=22, atol=1e-5)
    assert th_out[-1].startswith("mvn ")


_QAT_FUSION = "QAT fusion (Conv+BN kept): "


def test_static_quantization_and_qat_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials' static quantization tutorial on a small MobileNetV2: the residual
    add through ``nn.quantized.FloatFunctional`` (missing: added, with ``QFunctional`` after
    ``convert``), ``x.mean([2, 3])`` of a quantized tensor (missing: added), ``fuse_modules``
    of ``ConvBNReLU`` and residual convs, the printed fused / observed / quantized blocks,
    PTQ with ``default_qconfig`` and per-channel x86, QAT with ``disable_observer`` and
    ``nn.intrinsic.qat.freeze_bn_stats`` (missing: added) and ``convert(inplace=False)``
    each epoch; ``fuse_model(is_qat=True)`` (``fuse_modules_qat``, missing) keeps Conv + BN
    as torch's ``ConvBn2d`` QAT modules, which shardflow does not build: it says so, and
    the QAT run folds the batch norms first (both frameworks); FX graph mode's
    ``prepare_qat_fx`` (with ``get_default_qat_qconfig_mapping``, missing: added) is refused
    with NotImplementedError. Every other line and warning agrees."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(
        tmp_path, monkeypatch, capsys, f"{GEN}/qat_tutorial.py")
    assert len(th_out) == 100, "\n".join(th_out)
    assert th_out.count(_QAT_FUSION + "done") == 1
    assert sf_out.count(_QAT_FUSION + "not implemented, True") == 1
    assert th_out[-1] == "fx graph mode: converted GraphModule"
    assert sf_out[-1] == "fx graph mode: not implemented, True"
    keep = [i for i, line in enumerate(th_out[:-1]) if not line.startswith(_QAT_FUSION)]
    same_printout([sf_out[i] for i in keep], [th_out[i] for i in keep], what="qat_tutorial")


def test_clip_and_simclr_contrastive_losses_like_torch(tmp_path, monkeypatch, capsys):
    """CLIP-style training (a ``logit_scale`` parameter ``.exp()``-ed and ``clamp_``-ed under
    ``no_grad``, ``F.normalize`` / ``norm(dim=1, keepdim=True)``, symmetric cross-entropy on
    ``torch.arange`` labels, open_clip's ``ClipLoss``, a causal text transformer pooled by
    ``x[torch.arange(n), text.argmax(dim=-1)]``, zero-shot ``softmax`` / ``topk``), Spijkervet's
    ``NT_Xent`` (``torch.ones((N, N), dtype=bool)``, ``fill_diagonal_``, ``CosineSimilarity``
    of broadcast views, ``torch.diag(sim, +-k)``, boolean-mask indexing) and the UvA course's
    ``info_nce_loss`` (``torch.eye(..., dtype=torch.bool)``, ``masked_fill_``, ``roll``,
    ``logsumexp``, ``argsort(descending=True).argmin``). Every line agrees."""
    th_out, th_warned = _same_run(tmp_path, monkeypatch, capsys, "contrastive", lines=11)
    assert th_warned == []


def test_milesial_unet_segmentation_like_torch(tmp_path, monkeypatch, capsys):
    """milesial/Pytorch-UNet: bilinear ``nn.Upsample(align_corners=True)`` and
    ``ConvTranspose2d`` decoders, ``F.pad`` by computed odd differences, channels-last
    models and inputs, RMSprop (``foreach=True``, momentum, weight decay),
    ``ReduceLROnPlateau('max')`` on the validation dice, a disabled ``GradScaler`` /
    ``autocast``, ``clip_grad_norm_``, dice losses over ``F.one_hot(...).permute(0, 3, 1, 2)``
    and ``torch.where(sets_sum == 0, ...)``, ``inference_mode`` evaluation, ``F.interpolate``
    of the prediction. Every line and warning agrees."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(
        tmp_path, monkeypatch, capsys, f"{GEN}/unet_segmentation.py")
    assert _without_once(sf_warned) == _without_once(th_warned)
    assert len(th_out) == 10, "\n".join(th_out)
    # Each model's 2nd and 3rd steps: rtol 1e-2. The 2 x 2 bottleneck BatchNorms
    # give a few parameters gradients that float32 rounding moves by percents, and RMSprop's
    # first steps (v = 0.01 g^2) turn them into lr-sized steps: torch's own run with
    # contiguous instead of channels-last tensors prints a 3rd grad norm 0.75% apart
    # (0.345215 against 0.347812). The first step, the printed structure and the
    # predictions: 1e-5.
    chaotic = [2, 3, 7, 8]
    steady = [i for i in range(len(th_out)) if i not in chaotic]
    same_printout([sf_out[i] for i in steady], [th_out[i] for i in steady], what="unet")
    same_printout([sf_out[i] for i in chaotic], [th_out[i] for i in chaotic], what="unet", rtol=1e-2)
