"""The optimizers' shared argument checks, with PyTorch's messages (one table)."""

from __future__ import annotations

_NONNEGATIVE = {
    "lr": "Invalid learning rate: {} (expected lr >= 0)",
    "lr_decay": "Invalid lr_decay value: {} (expected >= 0)",
    "eps": "Invalid epsilon value: {} (expected eps >= 0)",
    "weight_decay": "Invalid weight_decay value: {} (expected >= 0)",
    "momentum": "Invalid momentum value: {} (expected momentum >= 0)",
    "alpha": "Invalid alpha value: {} (expected alpha >= 0)",
    "initial_accumulator_value": "Invalid initial_accumulator_value value: {}",
    "momentum_decay": "Invalid momentum_decay value: {} (expected >= 0)",
}


def check_nonnegative(**values) -> None:
    """Raise ValueError (PyTorch's message) for the first of ``values``, in the order given,
    that is below zero. The test is ``value < 0.0``, so NaN passes, as it did in each
    optimizer before this table."""
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(_NONNEGATIVE[name].format(value))


def check_betas(betas) -> None:
    """Raise ValueError (PyTorch's message) unless both Adam-style betas lie in [0, 1)."""
    for i, beta in enumerate(betas[:2]):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta} (expected [0, 1))")
