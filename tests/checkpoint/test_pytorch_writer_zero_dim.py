"""A 0-d tensor written in ``torch.save``'s zip format (a whole-module save, a file from
``format_utils.dcp_to_torch_save``) comes back 0-d in torch.load and shardflow.load: the
writer made it shape [1] (``np.ascontiguousarray`` gives at least one dimension), so an
optimizer's ``step`` read back in PyTorch had the wrong shape."""

import numpy as np
import pytest
import torch

import shardflow
from shardflow.checkpoint.pytorch_writer import save_pytorch_file


@pytest.mark.parametrize("dtype", [shardflow.float32, shardflow.int64, shardflow.bfloat16])
def test_zero_dim_tensor_round_trips_through_torch_load(tmp_path, dtype):
    path = tmp_path / "step.pth"
    value = shardflow.tensor(3.0).to(dtype)
    save_pytorch_file({"step": value, "row": shardflow.tensor([1.0, 2.0]).to(dtype)}, path)
    th = torch.load(path, weights_only=True)
    assert th["step"].shape == torch.tensor(3.0).shape == torch.Size([])
    assert th["step"].dtype == getattr(torch, str(dtype).split(".")[-1])
    assert th["step"].float().item() == 3.0
    assert th["row"].shape == torch.Size([2])
    back = shardflow.load(path)
    assert back["step"].shape == () and float(back["step"].float()) == 3.0


def test_zero_dim_tensor_of_a_whole_module_save(tmp_path):
    """A buffer that is 0-d (BatchNorm's num_batches_tracked) in a whole-module save."""
    path = tmp_path / "bn.pt"
    bn = shardflow.nn.BatchNorm1d(3)
    shardflow.save(bn, path)
    th = torch.load(path, weights_only=False)
    assert th.num_batches_tracked.shape == torch.Size([])
    np.testing.assert_array_equal(th.running_var.numpy(), np.ones(3, np.float32))
