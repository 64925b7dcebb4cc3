"""``torch.backends.mps``: Apple's Metal backend, which shardflow does not have. The queries
answer as torch's Linux build answers: not available, not built; the Mac-only functions raise
the exception type torch's Linux build raises, with a message saying what to check."""

from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False


def _no_mps(what: str) -> str:
    return (f"{what} needs the MPS backend (macOS on Apple silicon), which shardflow does not have; "
            "check torch.backends.mps.is_available() first")


def get_core_count() -> int:
    """The GPU core count on a Mac; torch's Linux build has no such function in its C module
    (AttributeError), and neither has shardflow."""
    raise AttributeError(_no_mps("torch.backends.mps.get_core_count()"))


def get_name() -> str:
    """The Metal device's name on a Mac (AttributeError here, as torch's Linux build)."""
    raise AttributeError(_no_mps("torch.backends.mps.get_name()"))


def is_macos_or_newer(major: int, minor: int) -> bool:
    """torch's RuntimeError without the MPS backend."""
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend. " + _no_mps("is_macos_or_newer()"))


def is_macos13_or_newer(minor: int = 0) -> bool:
    return is_macos_or_newer(13, minor)
