"""torch's top-level loss functions (``torch.cosine_embedding_loss`` ...): the aten ops behind
``nn.functional``'s losses, with the aten signature — every argument positional, no
``size_average``/``reduce``, and ``reduction`` an integer code: 0 none, 1 mean, 2 sum (any other
integer leaves the loss unreduced, as aten's ``apply_loss_reduction`` does). Each calls the
``nn.functional`` loss, so values and gradients are that function's.

Default ``reduction``: aten's schema (and torch's ``.pyi`` stub) say 1 (mean), but torch 2.13's
Python binding applies none when the argument is omitted (``torch.margin_ranking_loss(a, b, y)``
returns the unreduced loss); shardflow does what torch does, so the default here is 0.
"""

from __future__ import annotations

from . import functional as F
from . import functional_extra as FX

__all__ = ["cosine_embedding_loss", "ctc_loss", "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
           "triplet_margin_loss"]


def _reduction(code, op: str, position: int) -> str:
    if isinstance(code, bool) or not isinstance(code, int):
        raise TypeError(f"{op}(): argument 'reduction' (position {position}) must be int, not {type(code).__name__}")
    return {1: "mean", 2: "sum"}.get(code, "none")


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    """``torch.cosine_embedding_loss``: ``F.cosine_embedding_loss`` with a reduction code."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss", 5))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: int = 0,
             zero_infinity: bool = False):
    """``torch.ctc_loss``: ``F.ctc_loss`` with a reduction code (torch's binding, too, gives the
    per-sample losses when ``reduction`` is omitted)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      reduction=_reduction(reduction, "ctc_loss", 6), zero_infinity=zero_infinity)


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 0):
    """``torch.hinge_embedding_loss``: ``F.hinge_embedding_loss`` with a reduction code."""
    return FX.hinge_embedding_loss(input, target, margin,
                                   reduction=_reduction(reduction, "hinge_embedding_loss", 4))


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    """``torch.margin_ranking_loss``: ``F.margin_ranking_loss`` with a reduction code."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction, "margin_ranking_loss", 5))


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction: int):
    """``torch.poisson_nll_loss``: ``F.poisson_nll_loss``; all six arguments are required, as
    in aten."""
    return FX.poisson_nll_loss(input, target, log_input, full, eps=eps,
                               reduction=_reduction(reduction, "poisson_nll_loss", 6))


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 0):
    """``torch.triplet_margin_loss``: ``F.triplet_margin_loss`` with a reduction code."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss", 8))
