"""``torch.utils.data._utils``: PyTorch's private paths that programs import
``default_collate`` / ``get_worker_info`` from (``collate``, ``worker``)."""

from . import collate, worker  # noqa: F401
