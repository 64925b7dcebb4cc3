"""``torch.storage``'s path: the storage classes of ``backend/storage.py`` (no logic here)."""

from .backend.storage import LEGACY_STORAGES as LEGACY_STORAGES
from .backend.storage import StorageBase, TypedStorage, UntypedStorage
from .backend.storage import _LegacyStorage as _LegacyStorage
from .backend.storage import (
    _set_always_warn_typed_storage_removal as _set_always_warn_typed_storage_removal,
)
from .backend.storage import _warn_typed_storage_removal as _warn_typed_storage_removal

__all__ = ["TypedStorage", "UntypedStorage", "StorageBase"]
