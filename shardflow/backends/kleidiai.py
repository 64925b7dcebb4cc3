"""``torch.backends.kleidiai.is_available()``: False (Arm's KleidiAI kernels are not used)."""

__all__ = ["is_available"]


def is_available() -> bool:
    return False
