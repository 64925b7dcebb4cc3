"""``tensor_split`` with negative split points against PyTorch (found by tests/ops/fuzz):
torch cuts ``input[edges[i]:edges[i + 1]]`` with Python slice semantics, so -1 is the
last position; shardflow clamped it to 0 and returned pieces of the wrong sizes silently."""

import itertools

import torch

import shardflow as sf


def test_tensor_split_points_match_torch_including_negative():
    for n in range(5):
        for idx in itertools.product(range(-6, 7), repeat=2):
            t = [a.tolist() for a in torch.tensor_split(torch.arange(n), list(idx))]
            s = [a.tolist() for a in sf.tensor_split(sf.arange(n), list(idx))]
            assert s == t, (n, idx)


def test_tensor_split_negative_points_along_a_dim_with_grad():
    for L in (torch, sf):
        x = L.arange(12.0).reshape(3, 4).requires_grad_(True)
        parts = L.tensor_split(x, [1, -1], dim=1)
        assert [tuple(p.shape) for p in parts] == [(3, 1), (3, 2), (3, 1)]
        (parts[1] * 2).sum().backward()
        assert x.grad[:, 1:3].eq(2).all() and x.grad[:, 0].eq(0).all()


def test_movedim_of_0d_tensor_matches_torch():
    """(fuzz) movedim of a 0-d tensor over dim 0/-1 raised NumPy's 'axes don't match array'."""
    for src, dst in [(0, 0), (-1, 0), ([0], [-1])]:
        t = torch.movedim(torch.tensor(2.5), src, dst)
        s = sf.movedim(sf.tensor(2.5), src, dst)
        assert tuple(s.shape) == tuple(t.shape) == () and s.item() == t.item()
