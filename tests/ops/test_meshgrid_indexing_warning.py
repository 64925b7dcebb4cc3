"""``torch.meshgrid`` without ``indexing`` warns, as torch 2.13 does ("in an upcoming release,
it will be required to pass the indexing argument."), and uses ``'ij'``. shardflow took
``indexing="ij"`` as its silent default (found by DETR's ``util/box_ops.masks_to_boxes``,
``tests/parity/test_public_programs_more_t.py``). With ``indexing`` given, no warning.
torch warns once per process (``TORCH_WARN_ONCE``), and every time under
``set_warn_always(True)``; shardflow the same (it warned at every call: nerf-pytorch's
``get_rays`` and its training coordinates gave two warnings where torch gives one,
``tests/parity/test_public_programs_more_ai.py``)."""

import warnings

import numpy as np
import pytest
import torch

import shardflow


def test_meshgrid_without_indexing_warns_and_is_ij_like_torch(monkeypatch):
    from shardflow.backend import user_warning

    monkeypatch.setattr(user_warning, "_given", set())  # as in a fresh process
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


def _meshgrid_warnings(lib, calls=2):
    counts = []
    for _ in range(calls):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.meshgrid(lib.arange(3.0), lib.arange(2.0))
        counts.append(sum("required to pass the indexing argument" in str(w.message) for w in caught))
    return counts


def test_meshgrid_warns_once_per_process_like_torch(monkeypatch):
    from shardflow.backend import user_warning

    monkeypatch.setattr(user_warning, "_given", set())  # as in a fresh process
    assert _meshgrid_warnings(shardflow, 3) == [1, 0, 0]
    torch.meshgrid(torch.arange(3.0), torch.arange(2.0))  # torch's once is spent by now in any case
    assert _meshgrid_warnings(torch) == [0, 0]
    for lib in (torch, shardflow):
        lib.set_warn_always(True)
        try:
            assert _meshgrid_warnings(lib) == [1, 1], lib.__name__
        finally:
            lib.set_warn_always(False)


def test_meshgrid_with_indexing_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for indexing in ("ij", "xy"):
            sf = shardflow.meshgrid(shardflow.arange(3.0), shardflow.arange(2.0), indexing=indexing)
            th = torch.meshgrid(torch.arange(3.0), torch.arange(2.0), indexing=indexing)
            for s, t in zip(sf, th):
                np.testing.assert_array_equal(s.numpy(), t.numpy())
    for lib in (shardflow, torch):  # torch's RuntimeError (it was a ValueError)
        with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij", but received: ji'):
            lib.meshgrid(lib.arange(3.0), indexing="ji")


@pytest.mark.parametrize("case", ["two_dim", "mixed_dtypes", "no_tensors", "empty_list"])
def test_meshgrid_refuses_what_torch_refuses(case):
    """A 2-d tensor (its elements were silently taken as one axis), mixed dtypes (the grids
    came out in different dtypes) and no tensors (an empty tuple) raise torch's RuntimeError."""
    make = {
        "two_dim": lambda lib: lib.meshgrid(lib.zeros(2, 2), lib.zeros(3), indexing="ij"),
        "mixed_dtypes": lambda lib: lib.meshgrid(lib.zeros(2), lib.zeros(3, dtype=lib.int64), indexing="ij"),
        "no_tensors": lambda lib: lib.meshgrid(indexing="ij"),
        "empty_list": lambda lib: lib.meshgrid([], indexing="xy"),
    }[case]
    match = {"two_dim": "Expected 0D or 1D tensor in the tensor list but got", "mixed_dtypes":
             "meshgrid expects all tensors to have the same dtype", "no_tensors": "meshgrid expects a non-empty TensorList",
             "empty_list": "meshgrid expects a non-empty TensorList"}[case]
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match=match):
            make(lib)


def test_meshgrid_of_zero_and_one_dim_tensors_like_torch():
    """0-d tensors count as one coordinate, as in torch."""
    for indexing in ("ij", "xy"):
        sf = shardflow.meshgrid(shardflow.tensor(2.0), shardflow.arange(3.0), indexing=indexing)
        th = torch.meshgrid(torch.tensor(2.0), torch.arange(3.0), indexing=indexing)
        for s, t in zip(sf, th, strict=True):
            assert tuple(s.shape) == tuple(t.shape)
            np.testing.assert_array_equal(s.numpy(), t.numpy())
