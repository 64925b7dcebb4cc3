"""``torch.bucketize`` with boundaries that are not 1-D: torch's message, without the
``bucketize(): `` prefix shardflow added (session 40, compat-audio)."""

import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("boundaries", [[[0.0, 1.0]], 1.0])
def test_boundaries_not_1d_message_like_torch(boundaries):
    messages = []
    for lib in (torch, sf):
        with pytest.raises(RuntimeError) as caught:
            lib.bucketize(lib.tensor([1.0, 2.0]), lib.tensor(boundaries))
        messages.append(str(caught.value))
    assert messages[1] == messages[0]
