"""A bare int device with an accelerator (the CUDA stand-in here) is ``cuda:N``, as in
PyTorch: ``model.to(rank)`` / ``tensor.to(0)`` / ``device=0`` (the DDP tutorial series'
``Trainer``)."""

import numpy as np

import shardflow


def test_int_device_is_that_cuda_device():
    d = shardflow.device(0)
    assert (d.type, d.index) == ("cuda", 0)
    assert repr(d) == "device(type='cuda', index=0)"  # torch.device(0) on a CUDA machine
    x = shardflow.tensor([1.0, 2.0]).to(0)
    assert str(x.device) == "cuda:0"
    np.testing.assert_array_equal(x.cpu().numpy(), [1.0, 2.0])
    assert str(shardflow.zeros(2, device=0).device) == "cuda:0"
    m = shardflow.nn.Linear(2, 2).to(0)
    assert str(m.weight.device) == "cuda:0"
