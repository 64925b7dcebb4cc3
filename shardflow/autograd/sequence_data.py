"""What ``torch.tensor`` reads from nested Python sequences besides their numbers: the dtype
that NumPy arrays, NumPy scalars and Tensors inside them ask for, and torch's warning that a
list of ``numpy.ndarray`` s is slow.

* **dtype** (torch's ``infer_scalar_type``): with no ``dtype=``, ``torch.tensor(data)`` /
  ``torch.as_tensor(data)`` give each leaf a dtype -- a Python ``float`` the default dtype,
  ``int`` int64, ``bool`` bool, ``complex`` the default complex dtype, a NumPy array or
  scalar or a Tensor its own dtype -- and promote them all with ``torch.promote_types``. So
  ``torch.tensor([np.eye(3)[0], np.eye(3)[1]])`` is float64 (NumPy's rows are float64) and
  ``torch.tensor([np.int32(1), np.int32(2)])`` is int32, where NumPy's own inference of the
  list (float64 -> default dtype, any int -> int64) gave float32 and int64. Old code that
  one-hot encodes with ``np.eye(n)[ids]`` and passes lists of those rows is the common case.
* **warning**: torch warns once per process (``TORCH_WARN_ONCE`` in ``recursive_store``)
  when it copies a ``numpy.ndarray`` that is an item of a sequence, for any constructor
  (``tensor``, ``as_tensor``, ``Tensor``, ``LongTensor`` ...), and only when the result has
  elements. shardflow warns the same text once per process, at the user's line.
"""

from __future__ import annotations

import numpy as np

from ..backend import as_dtype, dtypes
from ..backend.user_warning import first_time, warn_at_caller

__all__ = ["scan", "inferred_dtype", "warn_list_of_ndarrays"]

LIST_OF_NDARRAYS = (
    "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting the "
    "list to a single numpy.ndarray with numpy.array() before converting to a tensor.")

PYTHON_SCALARS = frozenset((float, int, bool, complex))


class Scan:
    """The leaves of nested sequence data: the dtypes of its NumPy arrays / scalars and
    Tensors, the Python scalar types, and whether a NumPy array is an item of a sequence."""

    __slots__ = ("array_dtypes", "python_types", "ndarray_item")

    def __init__(self):
        self.array_dtypes: list = []
        self.python_types: set = set()
        self.ndarray_item = False


def scan(data, tensor_type) -> Scan:
    """Walk ``data`` (a list or tuple, nested); ``tensor_type`` is the Tensor class (this
    module sits below it). A flat run of Python numbers is read with one ``set(map(type))``."""
    found = Scan()
    _walk(data, tensor_type, found)
    return found


def _walk(seq, tensor_type, found: Scan) -> None:
    kinds = set(map(type, seq))
    if kinds <= PYTHON_SCALARS:
        found.python_types |= kinds
        return
    for item in seq:
        kind = type(item)
        if kind in PYTHON_SCALARS:
            found.python_types.add(kind)
        elif isinstance(item, list | tuple):
            _walk(item, tensor_type, found)
        elif isinstance(item, np.ndarray):
            found.ndarray_item = True
            found.array_dtypes.append(item.dtype)
        elif isinstance(item, np.generic):
            found.array_dtypes.append(item.dtype)
        elif isinstance(item, tensor_type):
            found.array_dtypes.append(item.dtype)


def _python_dtype(kind):
    if kind is float:
        return dtypes.get_default_dtype()
    if kind is complex:
        return dtypes.get_default_complex_dtype()
    return as_dtype("bool" if kind is bool else "int64")


def inferred_dtype(found: Scan):
    """torch's dtype for the scanned data, or None when it holds no NumPy or Tensor leaf (then
    NumPy's inference with the default-dtype rules, the caller's, is already torch's) or one
    whose dtype has no torch counterpart (strings, objects: the caller reports those)."""
    if not found.array_dtypes:
        return None
    try:
        leaves = [as_dtype(d) for d in found.array_dtypes]
    except (TypeError, ValueError, KeyError):
        return None
    result = leaves[0]
    for d in leaves[1:]:
        result = dtypes.promote_types(result, d)
    for kind in found.python_types:
        result = dtypes.promote_types(result, _python_dtype(kind))
    return result


def warn_list_of_ndarrays(found: Scan, size: int) -> None:
    """torch's once-per-process warning, when a NumPy array was an item of a sequence and the
    new tensor has elements (torch copies nothing, and says nothing, for an empty one)."""
    if found.ndarray_item and size and first_time("list_of_ndarrays"):
        warn_at_caller(LIST_OF_NDARRAYS)
