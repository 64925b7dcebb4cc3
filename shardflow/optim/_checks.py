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
}


def check_nonnegative(**values) -> None:
    """Raise ValueError (PyTorch's message) for the first of ``values``, in the order given,
    that is below zero. The test is ``value < 0.0``, so NaN passes, as it did in each
    optimizer before this table."""
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(_NONNEGATIVE[name].format(value))
