"""``F.cosine_embedding_loss`` refuses the shapes torch refuses, with torch's messages
(session 40, compat-audio): a 2-D target, a 1-D target with 1-D inputs and a 0-D target
with 2-D inputs each gave a value in shardflow."""

import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 2)), ((3,), (3,), (2,)), ((2, 3), (2, 3), ()),
                                    ((2, 3), (2, 3), (3,))])
def test_refusals_like_torch(shapes):
    a, b, t = shapes
    messages = []
    for lib in (torch, sf):
        with pytest.raises(RuntimeError) as caught:
            lib.nn.functional.cosine_embedding_loss(lib.ones(a), lib.ones(b), lib.ones(t))
        messages.append(str(caught.value))
    assert messages[1] == messages[0]


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2,)), ((3,), (3,), ()), ((2, 3), (2, 3), (1,))])
def test_accepted_shapes_still_compute(shapes):
    a, b, t = shapes
    want = torch.nn.functional.cosine_embedding_loss(torch.ones(a), torch.arange(3.0).expand(b), -torch.ones(t),
                                                     reduction="none")
    got = sf.nn.functional.cosine_embedding_loss(sf.ones(a), sf.arange(3.0).expand(b), -sf.ones(t), reduction="none")
    assert tuple(got.shape) == tuple(want.shape)
    assert got.numpy().tolist() == pytest.approx(want.numpy().tolist(), rel=1e-6)
