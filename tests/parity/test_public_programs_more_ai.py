"""Public PyTorch programs, session 38 (programs-ai): state-space models, neural rendering,
meta-learning with ``torch.func``, mixture densities, distillation, weight averaging,
learning-rate schedules and diffusion sampling (``programs/research_ai``), each run as a
script on torch and, with its imports rewritten, on shardflow, from the same
``manual_seed`` / ``np.random.seed`` (shardflow draws torch's numbers: docs/COMPAT.md
"Random seeds"; no weight copying, no shared draws), compared on every printed line and
warning. See docs/COMPAT.md, "Public programs" and "Programs-ai (session 38)".
"""

import pytest

from .test_public_programs_more_af import _run
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

AI = "research_ai"


def _same_run(tmp_path, monkeypatch, capsys, name, argv=(), lines=None, **tolerance):
    """Run ``programs/research_ai/<name>.py`` on both; the printouts and warnings agree, and
    the torch run printed ``lines`` lines (so that a test cannot pass on an empty run).
    Returns both printouts and torch's warnings."""
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = _run(
        tmp_path, monkeypatch, capsys, f"{AI}/{name}.py", argv=argv)
    assert sf_warned == th_warned
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
