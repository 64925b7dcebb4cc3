"""layer_norm over rows of no elements returns torch's empty result and gradients (shardflow
raised NumPy's "cannot reshape array of size 0"), and an empty ``normalized_shape`` raises
torch's RuntimeError (shardflow normalised over nothing and returned a result)."""

import numpy as np
import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("shape,ns", [((3, 0), (0,)), ((0,), (0,)), ((2, 0, 0), (0, 0)), ((0, 4), (4,))])
@pytest.mark.parametrize("affine", [False, True])
def test_empty_rows_like_torch(shape, ns, affine):
    outs = []
    for lib in (torch, sf):
        x = lib.zeros(*shape, requires_grad=True)
        w = lib.ones(*ns, requires_grad=True) if affine else None
        b = lib.zeros(*ns, requires_grad=True) if affine else None
        y = lib.nn.functional.layer_norm(x, ns, w, b)
        y.sum().backward()
        outs.append((tuple(y.shape), str(y.dtype).split(".")[-1], tuple(x.grad.shape),
                     None if w is None else np.asarray(w.grad.detach().numpy()).tolist()))
    assert outs[0] == outs[1]


def test_empty_normalized_shape_raises_torchs_error():
    msg = None
    try:
        torch.nn.functional.layer_norm(torch.randn(2, 3), ())
    except RuntimeError as e:
        msg = str(e)
    assert msg is not None
    with pytest.raises(RuntimeError) as got:
        sf.nn.functional.layer_norm(sf.randn(2, 3), ())
    assert str(got.value) == msg
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        sf.nn.LayerNorm([])(sf.randn(2, 3))
