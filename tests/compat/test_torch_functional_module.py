"""``torch.functional`` (``shardflow/functional.py``): the module path programs import
(``import torch.functional as F`` in the introyt "Building Models" tutorial), with every name
of torch 2.13's ``torch.functional.__all__``, each the top-level function, computing what
torch's computes."""

import importlib

import numpy as np
import pytest
import torch
import torch.functional as TF

import shardflow as sf


def test_import_path_and_names_are_torchs():
    F = importlib.import_module("shardflow.functional")
    assert sf.functional is F
    assert F.__all__ == TF.__all__
    for name in TF.__all__:
        assert getattr(F, name) is getattr(sf, name), name
    # like torch's module, it has none of nn.functional's names
    assert not hasattr(TF, "relu") and not hasattr(F, "relu")
    with pytest.raises(AttributeError):
        F.max_pool2d  # noqa: B018


def test_values_match_torch():
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    b = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    F = sf.functional
    pairs = [
        (F.einsum("ij,jk->ik", sf.tensor(a), sf.tensor(b)), TF.einsum("ij,jk->ik", torch.tensor(a), torch.tensor(b))),
        (F.tensordot(sf.tensor(a), sf.tensor(b), 1), TF.tensordot(torch.tensor(a), torch.tensor(b), 1)),
        (F.norm(sf.tensor(a), dim=1), TF.norm(torch.tensor(a), dim=1)),
        (F.cdist(sf.tensor(a), sf.tensor(a)), TF.cdist(torch.tensor(a), torch.tensor(a))),
        (F.block_diag(sf.tensor(b), sf.tensor(b)), TF.block_diag(torch.tensor(b), torch.tensor(b))),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    ours = F.unique(sf.tensor([3, 1, 3, 2]), return_counts=True)
    theirs = TF.unique(torch.tensor([3, 1, 3, 2]), return_counts=True)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert [p.shape for p in F.split(sf.tensor(a), 2)] == [p.shape for p in TF.split(torch.tensor(a), 2)]
    assert F.broadcast_shapes((3, 1), (1, 4)) == TF.broadcast_shapes((3, 1), (1, 4))
