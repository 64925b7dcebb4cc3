"""``grad_fn.next_functions``: PyTorch's view of the graph edges, which graph walkers (torchviz,
parameter-reachability checks) read: leaves reached through AccumulateGrad nodes whose
``.variable`` is the leaf, inputs that need no gradient as ``(None, 0)``."""

import numpy as np
import torch

import shardflow as sf


def _walk(fn, seen_leaves, none_edges):
    """Depth-first over next_functions: the ids of the leaves reached, the count of None edges."""
    for node, _ in fn.next_functions:
        if node is None:
            none_edges[0] += 1
        elif hasattr(node, "variable"):
            seen_leaves.append(node.variable)
        else:
            _walk(node, seen_leaves, none_edges)


def _program(t):
    rs = np.random.RandomState(0)
    w = t.tensor(rs.randn(3, 4), requires_grad=True)
    b = t.tensor(rs.randn(4), requires_grad=True)
    x = t.tensor(rs.randn(2, 3))  # needs no gradient
    y = (x @ w + b).tanh() * 2
    return (w, b), y.sum().grad_fn


def test_next_functions_reach_the_same_leaves_as_torch():
    (sw, sb), sfn = _program(sf)
    (tw, tb), tfn = _program(torch)
    s_leaves, s_none = [], [0]
    t_leaves, t_none = [], [0]
    _walk(sfn, s_leaves, s_none)
    _walk(tfn, t_leaves, t_none)
    assert sorted(map(id, s_leaves)) == sorted(map(id, (sw, sb)))
    assert sorted(map(id, t_leaves)) == sorted(map(id, (tw, tb)))
    assert s_none == t_none  # x's edge into the matmul, the scalar of the product


def test_a_leaf_edge_is_an_accumulate_grad_view():
    x = sf.ones(2, requires_grad=True)
    (node, nr), (none, nr2) = (x * 2).grad_fn.next_functions
    assert node.variable is x and nr == 0 and node.next_functions == ()
    assert none is None and nr2 == 0
    assert node == (x * 3).grad_fn.next_functions[0][0]  # two views of one leaf compare equal
