"""``torch.backends.miopen.immediate``: False, torch's default (shardflow has no ROCm/MIOpen
path; the flag changes nothing)."""

__all__ = ["immediate"]

immediate = False
