"""Public PyTorch programs, session 38 (programs-ai): state-space models, neural rendering,
meta-learning with ``torch.func``, mixture densities, distillation, weight averaging,
learning-rate schedules and diffusion sampling (``programs/research_ai``), each run as a
script on torch and, with its imports rewritten, on shardflow, from the same
``manual_seed`` / ``np.random.seed`` (shardflow draws torch's numbers: docs/COMPAT.md
"Random seeds"; no weight copying, no shared draws), compared on every printed line and
warning. See docs/COMPAT.md, "Public programs" and "Programs-ai (session 38)".
"""

import re
import warnings

import numpy as np
import pytest

from shardflow.backend import user_warning
from shardflow.backend.fp_errors import FP_MESSAGE

from .programs._harness import HERE, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

AI = "research_ai"


def _run(tmp_path, monkeypatch, capsys, path, argv=(), seed=0):
    """``test_public_programs_more_af._run`` (each framework after ``manual_seed(seed)`` and
    ``np.random.seed(seed)`` in its own directory, every warning recorded under
    ``simplefilter("always")``), with shardflow's import-time filter for NumPy's
    floating-point RuntimeWarnings put back in front: "always" would otherwise show them
    (``log(0)`` in ddim's ``ddpm_steps``: "divide by zero encountered in log") where a
    program run with Python's default filters sees none, as under torch (see
    ``shardflow/backend/fp_errors.py``, "Limits")."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir(parents=True)
        monkeypatch.chdir(where)
        lib.manual_seed(seed)
        np.random.seed(seed)
        if use_sf:  # once-per-process warnings as in a fresh process
            monkeypatch.setattr(user_warning, "_given", set())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", message=FP_MESSAGE, category=RuntimeWarning, module=r"shardflow(\.|$)")
            module = run_script(HERE / path, use_sf, argv=argv)
        messages = [re.sub(r" \(Triggered internally at [^)]*\)$", "", f"{w.category.__name__}: {w.message}")
                    for w in caught]
        runs.append((module, capsys.readouterr().out.splitlines(), messages, where))
    return runs


_ONCE_PER_PROCESS = ("UserWarning: Converting a tensor with requires_grad=True to a scalar",
                     "UserWarning: Creating a tensor from a list of numpy.ndarrays")


def _without_once(messages):
    return [m for m in messages if not m.startswith(_ONCE_PER_PROCESS)]


def _same_run(tmp_path, monkeypatch, capsys, name, argv=(), lines=None, **tolerance):
    """Run ``programs/research_ai/<name>.py`` on both; the printouts and warnings agree, and
    the torch run printed ``lines`` lines (so that a test cannot pass on an empty run).
    Returns both printouts and torch's warnings."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(
        tmp_path, monkeypatch, capsys, f"{AI}/{name}.py", argv=argv)
    # torch gives these once per process (TORCH_WARN_ONCE): an earlier test in this xdist
    # worker may have given torch's already; shardflow's once-state is reset by _run
    assert _without_once(sf_warned) == _without_once(th_warned)
    assert all(sf_warned.count(m) == 1 for m in sf_warned if m.startswith(_ONCE_PER_PROCESS))
    if lines is not None:
        assert len(th_out) == lines, "\n".join(th_out)
    same_printout(sf_out, th_out, what=name, **tolerance)
    return th_out, sf_out, th_warned


def test_mamba_minimal_like_torch(tmp_path, monkeypatch, capsys):
    """johnma2006/mamba-minimal: the ``ModelArgs`` dataclass (vocabulary padded to a multiple
    of 8), RMSNorm through ``rsqrt``, the depthwise causal ``Conv1d`` (``groups=d_inner``,
    padding cut back to ``l``), ``split`` by sizes, ``softplus`` step sizes, the selective
    scan (``torch.einsum`` of three operands, ``exp``, a Python loop of state updates and
    ``stack``), ``A_log`` from ``log`` of an expanded ``arange``, the lm head tied to the
    embedding; 6 AdamW steps with ``clip_grad_norm_``, then demo.ipynb's ``generate``
    (top-k by ``probs[probs < values[:, -1, None]] = 0``, ``sum(axis=1, keepdims=True)``,
    greedy and ``multinomial``). Every line agrees: the repr, the losses and gradient norms,
    the trained ``A_log`` row and the generated ids."""
    th_out, _, _ = _same_run(tmp_path, monkeypatch, capsys, "mamba_minimal", lines=29)
    assert sum(line.startswith("step ") for line in th_out) == 6


def test_nerf_like_torch(tmp_path, monkeypatch, capsys):
    """yenchenlin/nerf-pytorch: positional encoding (``2.**torch.linspace`` frequency bands,
    lambdas over ``torch.sin``/``cos``), the NeRF MLP with a skip and view directions,
    ``get_rays`` (``meshgrid`` without ``indexing``: torch's once-per-process UserWarning;
    shardflow gave it at every call. Both run under ``set_warn_always(True)`` here, so that
    an earlier test in the process cannot have spent torch's once), ``raw2outputs`` (``torch.Tensor([1e10]).expand``,
    ``norm``, ``randn`` density noise, the exclusive ``cumprod`` of transmittance),
    stratified sampling with ``torch.rand``, hierarchical ``sample_pdf`` (``cumsum``,
    ``searchsorted(right=True)``, ``gather`` on expanded cdfs, ``where``), ``sort`` of the
    merged samples, PSNR through ``log``; 6 Adam steps of coarse and fine networks with the
    exponential lr decay, then a deterministic render of a row. Every line agrees."""
    import torch

    import shardflow

    before = [(lib, lib.is_warn_always_enabled()) for lib in (torch, shardflow)]
    for lib, _ in before:
        lib.set_warn_always(True)
    try:
        th_out, _, th_warned = _same_run(tmp_path, monkeypatch, capsys, "nerf", lines=25)
    finally:
        for lib, flag in before:
            lib.set_warn_always(flag)
    assert sum(line.startswith("[TRAIN] Iter:") for line in th_out) == 6
    assert th_warned == 2 * ["UserWarning: torch.meshgrid: in an upcoming release, it will be required to pass "
                             "the indexing argument."]


def test_maml_regression_with_torch_func_like_torch(tmp_path, monkeypatch, capsys):
    """functorch's MAML sinusoid regression (``evjang_transforms.py``): parameters made by
    ``torch.Tensor(40, 1).uniform_(...).requires_grad_()``, the inner step by
    ``torch.func.grad`` of a functional net over a tuple of parameters, the per-task losses by
    ``vmap`` of that (a grad inside vmap, closing over the outer leaves), the outer loss by
    Python's ``sum`` over the vmapped tensor and ``backward`` through it all; ``torch.tensor``
    of a list of NumPy arrays (torch's slow-path UserWarning) and ``"%.4f" % loss`` of a
    grad-requiring tensor (torch's UserWarning); then 5 test-time steps through
    ``autograd.grad(create_graph=True)`` and an L1 loss. Every line and warning agrees."""
    th_out, sf_out, th_warned = _same_run(tmp_path, monkeypatch, capsys, "maml_regression", lines=10)
    assert th_out[0].startswith("Iteration 0 -- Outer Loss:")


def test_mixture_density_network_like_torch(tmp_path, monkeypatch, capsys):
    """sagelywizard/pytorch-mdn: the MDN layer (``nn.Softmax`` mixture weights, ``exp``
    scales, ``view`` to B x G x O), ``gaussian_probability`` (``expand_as``, ``prod``) and
    ``mdn_loss``, 40 Adam steps on an inverted noisy sine, ``sample`` (``Categorical(pi)``
    draws listed through ``.data``, ``sigma.data.new(...).normal_()``, per-row ``mul``/``add``
    into a ``Variable``); then the same loss through ``MixtureSameFamily(Categorical,
    Independent(Normal, 1))`` and its mean, variance, ``cdf`` and ``sample``. Every line
    agrees."""
    th_out, _, _ = _same_run(tmp_path, monkeypatch, capsys, "mdn", lines=15)
    nll, loss = (float(w) for w in th_out[10].split()[2::2])
    assert abs(nll - loss) < 1e-5


def test_knowledge_distillation_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials' knowledge distillation: ``torch.accelerator`` device selection, a
    teacher CNN and a student trained by cross entropy (dropout on: torch's masks, drawn by
    shardflow too), ``torch.manual_seed(42)`` before each student so that their first layers'
    norms agree, ``"{:,}".format`` parameter counts, distillation by the soft-target loss
    (softmax / log_softmax at temperature 2), then ``avg_pool1d`` of flattened features and
    ``nn.CosineEmbeddingLoss`` against the teacher's, ``load_state_dict`` across classes;
    added: ``nn.KLDivLoss(reduction="batchmean", log_target=True)`` equal to the tutorial's
    formula and haitongli's ``loss_fn_kd`` through ``nn.KLDivLoss()`` (torch's UserWarning
    about ``'mean'``). DataLoader shuffling draws torch's permutations. Every line agrees."""
    th_out, _, th_warned = _same_run(tmp_path, monkeypatch, capsys, "knowledge_distillation", lines=31)
    assert th_warned and "'batchmean' divides only by the batch size" in th_warned[0]
    soft, kl = (float(w) for w in th_out[-2].split()[3::2])
    assert abs(soft - kl) <= 1.5e-6  # (printed to 6 decimals)


def test_swa_and_ema_docs_examples_like_torch(tmp_path, monkeypatch, capsys):
    """PyTorch's "Weight Averaging (SWA and EMA)" examples: ``AveragedModel`` of a BatchNorm
    MLP, ``CosineAnnealingLR`` then ``SWALR`` (cosine annealing over 3 epochs) from
    ``swa_start``, ``update_bn`` over a shuffled DataLoader (running statistics recomputed
    with momentum ``None``, ``num_batches_tracked``), the averaged model's state dict
    (``n_averaged`` first); EMA through ``get_ema_multi_avg_fn`` with ``use_buffers=True``
    (the buffers averaged too); a custom ``avg_fn`` lambda. Every line agrees."""
    th_out, _, _ = _same_run(tmp_path, monkeypatch, capsys, "swa", lines=21)
    assert th_out[-1] == "custom avg n_averaged 3"


def test_lr_scheduler_docstring_examples_like_torch(tmp_path, monkeypatch, capsys):
    """The lr_scheduler docstrings' examples, each stepped after an optimizer step:
    ``OneCycleLR`` (cosine, cycling SGD momentum; ``three_phase`` linear, cycling Adam's
    beta1) and its ``state_dict`` into a fresh one, ``CyclicLR`` ``triangular2`` /
    ``exp_range`` with momentum cycling, ``SequentialLR`` over ``ConstantLR`` and
    ``ExponentialLR``, ``ChainedScheduler``, ``PolynomialLR``, ``LinearLR``, ``LambdaLR``,
    ``MultiplicativeLR``, ``ReduceLROnPlateau`` on a metric, and
    ``CosineAnnealingWarmRestarts`` stepped by fractional epochs (``T_i``, ``T_cur``).
    Every learning rate, momentum and loss agrees."""
    th_out, _, th_warned = _same_run(tmp_path, monkeypatch, capsys, "lr_schedulers", lines=25)
    assert th_warned == []
    assert th_out[-1].startswith("CosineAnnealingWarmRestarts [0.1, ")


def test_ddim_like_torch(tmp_path, monkeypatch, capsys):
    """ermongroup/ddim: ``get_beta_schedule`` (NumPy float64 ``linspace`` / sigmoid schedules
    made float32 by ``torch.from_numpy(...).float()``), ``noise_estimation_loss``
    (``(1-b).cumprod(dim=0).index_select(0, t)``, ``square().sum(dim=(1, 2, 3))``),
    antithetic ``randint`` timesteps, ``clip_grad_norm_``, ``EMAHelper`` (``.data``
    assignment and ``copy_``, ``ema_copy`` through ``type(module)(module.config)``), the
    sinusoidal timestep embedding with GroupNorm and swish, then sampling with
    ``generalized_steps`` (DDIM, eta 0 and 1: ``randn_like``) and ``ddpm_steps`` on the
    quadratic skip (a repeated timestep: ``beta_t.log()`` of 0 is ``-inf``, masked;
    ``clamp``). Every line agrees."""
    th_out, _, th_warned = _same_run(tmp_path, monkeypatch, capsys, "ddim", lines=16)
    assert th_warned == []
    assert sum(line.startswith("step: ") for line in th_out) == 8


def test_spectral_normalization_gan_like_torch(tmp_path, monkeypatch, capsys):
    """christiancosgrove/pytorch-spectral-normalization-gan: ``SpectralNorm`` deletes the
    wrapped module's ``weight`` from ``_parameters``, registers ``weight_u``/``weight_v``
    (``requires_grad=False``, from ``w.data.new(n).normal_(0, 1)``) and ``weight_bar``, and in
    every forward rebinds ``v.data`` / ``u.data`` by one power iteration (``torch.mv``,
    ``torch.t``) and ``setattr``s ``weight = w / sigma.expand_as(w)``; the hinge-loss training
    loop calls the discriminator twice (real, fake) before each backward, so torch's backward
    through the first call reads the ``u``/``v`` the second call bound (its ``.data`` setter
    swaps the storage the graph saved). shardflow's graph kept the old arrays: the first
    printed generator loss was 0.3% off (fixed: ``autograd/rebind.py``). Then PyTorch's own
    ``nn.utils.spectral_norm`` and ``parametrizations.spectral_norm`` against
    ``linalg.matrix_norm(ord=2)``. Every line agrees."""
    # atol: one unit of the 5th printed decimal (a float32 power iteration's matrix-vector
    # products round differently between BLAS builds: -0.17997 against -0.17996 was seen)
    th_out, _, _ = _same_run(tmp_path, monkeypatch, capsys, "sngan", lines=8, atol=1.5e-5)
    assert sum(line.startswith("disc loss") for line in th_out) == 2


def test_pyg_scatter_utilities_gnn_like_torch(tmp_path, monkeypatch, capsys):
    """PyTorch Geometric's pure-PyTorch ``scatter`` (``scatter_add_`` for sum/mean with
    ``clamp(min=1)`` counts, ``scatter_reduce_(..., 'amax'/'amin', include_self=False)``,
    ``'prod'`` from ``new_ones``), edge ``softmax``, ``add_self_loops`` and ``gcn_norm``
    (``deg.pow_(-0.5)``, ``masked_fill_`` of ``inf``), a GCN layer, a two-head GAT layer and a
    GIN sum by ``index_add_``, pooled by add/mean/max over a ``repeat_interleave`` batch
    vector; 8 Adam steps with weight decay, then gradients through max and product scatters.
    shardflow refused every backward through ``scatter_reduce_`` ("modified by an inplace
    operation": fixed, ``tests/ops/test_scatter_reduce_inplace_grad.py``). Every line
    agrees."""
    th_out, _, _ = _same_run(tmp_path, monkeypatch, capsys, "pyg_scatter_gnn", lines=19)
    assert sum(line.startswith("step ") for line in th_out) == 8


def test_attention_masks_and_checkpoint_docs_examples_like_torch(tmp_path, monkeypatch, capsys):
    """The docstring examples of ``nn.MultiheadAttention`` (sequence-first), with
    ``batch_first``, ``kdim``/``vdim``, a boolean ``key_padding_mask``, a float ``attn_mask``
    (torch's "mismatched key_padding_mask and attn_mask" UserWarning), per-head weights
    (``average_attn_weights=False``) and ``need_weights=False``;
    ``generate_square_subsequent_mask``; a pre-norm ``TransformerEncoder`` given
    ``is_causal=True`` with that mask and a boolean padding mask (torch warns from the
    encoder and from each directly called layer with their own argument names: shardflow
    warned from every self-attention instead; fixed,
    ``tests/nn/test_transformer_encoder_mask_warnings.py``), run every other step through
    ``torch.utils.checkpoint.checkpoint(use_reentrant=False)`` (recomputed in backward: the
    layers warn again), and ``checkpoint_sequential``. Every line and warning agrees."""
    th_out, _, th_warned = _same_run(tmp_path, monkeypatch, capsys, "attention_masks_checkpoint", lines=11)
    assert len(th_warned) == 14
    assert th_out[-2].startswith("checkpoint == plain True")


def test_fourier_neural_operator_like_torch(tmp_path, monkeypatch, capsys):
    """zongyi-li/fourier_neural_operator's ``fourier_2d.py``: ``SpectralConv2d`` with
    ``torch.rand(..., dtype=torch.cfloat)`` weights (shardflow drew only their real parts,
    leaving the imaginary parts 0: fixed, ``tests/ops/test_complex_random_fills.py``),
    ``torch.fft.rfft2`` / ``irfft2(s=...)``, the complex ``einsum`` written into slices of a
    complex ``zeros``, ``F.pad`` of a non-periodic domain, ``InstanceNorm2d``, 1 x 1 conv MLPs
    with GELU; ``UnitGaussianNormalizer`` (``torch.std`` over samples) and ``LpLoss``
    (relative and absolute ``torch.norm(..., p, 1)``); Adam with weight decay on complex
    parameters and ``CosineAnnealingLR`` per step over a shuffled DataLoader. Every line
    agrees, including a trained complex weight."""
    th_out, _, _ = _same_run(tmp_path, monkeypatch, capsys, "fno2d", lines=6)
    assert th_out[0] == "parameters 9409 torch.complex64"
