"""Run one program on torch and on shardflow and compare the pytrees of results."""

import numpy as np
import torch

import shardflow as sf


def to_numpy_tree(x):
    if isinstance(x, torch.Tensor | sf.Tensor):
        return np.asarray(x.detach().numpy())
    if isinstance(x, dict):
        return {k: to_numpy_tree(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(to_numpy_tree(v) for v in x) if not hasattr(x, "_fields") else type(x)(
            *(to_numpy_tree(v) for v in x))
    return x


def assert_same_tree(ours, theirs, atol=1e-10, rtol=1e-7, path="out"):
    """Same containers (types, keys, lengths), same shapes and values at every leaf."""
    assert type(ours) is type(theirs) or (isinstance(ours, np.ndarray) and isinstance(theirs, np.ndarray)), (
        f"{path}: {type(ours)} vs torch's {type(theirs)}")
    if isinstance(ours, dict):
        assert list(ours) == list(theirs), f"{path}: keys {list(ours)} vs {list(theirs)}"
        for k in ours:
            assert_same_tree(ours[k], theirs[k], atol, rtol, f"{path}[{k!r}]")
    elif isinstance(ours, list | tuple):
        assert len(ours) == len(theirs), f"{path}: length {len(ours)} vs {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_tree(a, b, atol, rtol, f"{path}[{i}]")
    elif isinstance(ours, np.ndarray):
        assert ours.shape == theirs.shape, f"{path}: shape {ours.shape} vs torch's {theirs.shape}"
        np.testing.assert_allclose(ours, theirs, atol=atol, rtol=rtol, err_msg=path)
    else:
        assert ours == theirs, f"{path}: {ours} vs {theirs}"


def compare(program, atol=1e-10, rtol=1e-7):
    """``program(m)`` with ``m`` = shardflow and = torch; results must agree. Returns ours."""
    ours = to_numpy_tree(program(sf))
    theirs = to_numpy_tree(program(torch))
    assert_same_tree(ours, theirs, atol, rtol)
    return ours


def t(m, array, requires_grad=False):
    return m.tensor(np.array(array, dtype=np.float64), requires_grad=requires_grad)  # a copy: no negative strides
