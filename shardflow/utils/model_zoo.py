"""``torch.utils.model_zoo``: the old name of the hub's weight download (``load_url`` is
``torch.hub.load_state_dict_from_url``, as in PyTorch)."""

from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
