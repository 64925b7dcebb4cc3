"""``torch.meshgrid`` without ``indexing`` warns, as torch 2.13 does ("in an upcoming release,
it will be required to pass the indexing argument."), and uses ``'ij'``. shardflow took
``indexing="ij"`` as its silent default (found by DETR's ``util/box_ops.masks_to_boxes``,
``tests/parity/test_public_programs_more_t.py``). With ``indexing`` given, no warning.
torch warns once per process (``TORCH_WARN_ONCE``: only its first call in a test session
can be checked), shardflow through Python's warning filters (once per call site by
default), as its other torch warnings."""

import warnings

import numpy as np
import pytest
import torch

import shardflow


def test_meshgrid_without_indexing_warns_and_is_ij_like_torch():
    results = []
    for lib in (torch, shardflow):
        a, b = lib.arange(3.0), lib.arange(2.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y, x = lib.meshgrid(a, b)
        messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        if lib is shardflow:  # (torch's warning: its first call in the process only)
            assert any("required to pass the indexing argument" in m for m in messages), messages
        ij = lib.meshgrid(a, b, indexing="ij")
        np.testing.assert_array_equal(y.numpy(), ij[0].numpy())
        np.testing.assert_array_equal(x.numpy(), ij[1].numpy())
        results.append((y.numpy(), x.numpy()))
    for s, t in zip(results[1], results[0]):
        assert s.shape == t.shape == (3, 2)
        np.testing.assert_array_equal(s, t)


def test_meshgrid_with_indexing_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for indexing in ("ij", "xy"):
            sf = shardflow.meshgrid(shardflow.arange(3.0), shardflow.arange(2.0), indexing=indexing)
            th = torch.meshgrid(torch.arange(3.0), torch.arange(2.0), indexing=indexing)
            for s, t in zip(sf, th):
                np.testing.assert_array_equal(s.numpy(), t.numpy())
    with pytest.raises(ValueError, match="indexing must be 'ij' or 'xy'"):
        shardflow.meshgrid(shardflow.arange(3.0), indexing="ji")
