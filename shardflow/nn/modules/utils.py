"""``torch.nn.modules.utils`` path: tuple expansion (``_pair`` ...) and the state-dict prefix helper."""

from __future__ import annotations

from ._utils import _ntuple, _pair, _single, _triple  # noqa: F401 (torch's path for them)

__all__ = ["consume_prefix_in_state_dict_if_present"]

_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Each element of ``t`` repeated ``n`` times, in reverse order (torch's form for
    ``F.pad``'s padding from a per-dimension tuple): ``(1, 2), 2 -> (2, 2, 1, 1)``."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """``out_size`` with each ``None`` replaced by the matching trailing entry of ``defaults``
    (adaptive pooling's output size); a number is returned as it is."""
    if isinstance(out_size, int | float):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that have it, in place (and from its
    ``_metadata``, if any): loading a ``DataParallel``/DDP checkpoint (``module.`` keys) into
    the bare model, as torch's function does."""
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
