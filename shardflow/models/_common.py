"""Helpers shared by the reference models: parameter counting and FLOP arithmetic.

FLOP convention (the one ``torch.utils.flop_counter.FlopCounterMode`` uses, so the numbers
can be checked against it): a multiply-add is 2 FLOPs; only matrix multiplies,
convolutions and attention's two batched matmuls (``QK^T`` and ``AV``, counted in full even
when causal) are counted; element-wise ops, norms, softmax and pooling are not. A training
step (forward + backward) costs about 3x the forward FLOPs.
"""

from __future__ import annotations


def count_parameters(module, trainable_only: bool = False) -> int:
    """Number of scalars in the module's (deduplicated, e.g. tied) parameters."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def conv_out(size: int, kernel: int, stride: int = 1, padding: int = 0) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def conv_flops(cin: int, cout: int, kernel: int, hout: int, wout: int, groups: int = 1) -> int:
    return 2 * (cin // groups) * kernel * kernel * cout * hout * wout


def linear_flops(fin: int, fout: int, rows: int = 1) -> int:
    return 2 * fin * fout * rows


def scale(flops: int, training: bool) -> int:
    return 3 * flops if training else flops
