"""``torch.backends.cusparselt``: ``is_available()`` False and ``version()`` None, what a torch
build without cuSPARSELt answers (shardflow has no semi-structured sparse kernels)."""

__all__ = ["is_available", "version"]


def is_available() -> bool:
    return False


def version():
    return None
