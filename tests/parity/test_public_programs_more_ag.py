"""Public PyTorch programs, session 37 (programs-ag): generative models, self-supervised
learning and "from scratch" research code (``programs/research_ag``), each run as a script
on torch and, with its imports rewritten, on shardflow, from the same ``manual_seed``
(shardflow draws torch's numbers: docs/COMPAT.md "Random seeds"; no weight copying, no
shared draws), compared on every printed line. See ``test_public_programs.py`` and
docs/COMPAT.md, "Public programs".
"""

import pytest

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
