"""``target[idx] += values`` with repeated indices accumulating, on NumPy or CuPy arrays: the
one scatter-add the ops share (``index_add``, ``scatter_add``, the backward of indexing,
``index_select``, ``grid_sample``, the backward of a reflect/replicate/circular ``pad`` with
long replicated edges).

* CuPy: its ``add.at`` (``backend/ufuncs.py`` ``scatter_at``; NumPy's would convert the
  device arrays).
* NumPy, kernels on, a contiguous float target: the index (integer arrays over the leading
  dims) becomes one row number per selected row (``backend/flat_at.py`` ``row_plan``) and the
  embedding kernel adds the rows in index order (``kernels/embedding.py`` ``add_rows``).
* Otherwise NumPy's ``add.at`` through one flat index (``flat_at``: its fast loop).

Every route forms each element's sum in ``np.add.at``'s order, so they agree bit for bit
(``tests/ops/test_slow_ops.py``).
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..backend.flat_at import row_plan
from ..backend.ufuncs import scatter_at
from ..kernels import embedding as _emb_kernels

__all__ = ["add_at"]


def add_at(target, idx, values) -> None:
    """``target[idx] += values``, repeats accumulating, in place (module docstring)."""
    if type(target) is np.ndarray and target.size and kernels.usable(target):
        plan = row_plan(target, idx, values)
        if plan is not None and plan[1].dtype == target.dtype and plan[0].size:
            rows, vals = plan
            _emb_kernels.add_rows(target.reshape(-1, vals.shape[1]), rows, np.ascontiguousarray(vals))
            return
    scatter_at("add", target, idx, values)
