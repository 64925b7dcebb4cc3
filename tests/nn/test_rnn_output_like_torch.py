"""An RNN layer's output as torch 2.13 returns it on CPU: its ``grad_fn`` is printed by
programs that print the output (hunkim's 14_1_seq2seq prints ``encoder_outputs``), so the
node is named as torch's (``StackBackward0`` for RNN/GRU, which stack the steps;
``MkldnnRnnLayerBackward0`` for the LSTM, mkldnn's layer); with ``batch_first`` the output
is the transposed view torch returns (not contiguous, the same strides; shardflow copied it
into a contiguous tensor, so ``is_contiguous()`` and ``stride()`` answered differently).
Left as they are: torch's RNN/GRU transpose in place (``TransposeBackward1``), shardflow's
view is ``TransposeBackward0`` (torch's LSTM name); a packed sequence's output data is
torch's ``CatBackward0``, shardflow's ``IndexBackward0``."""

import pytest
import torch

import shardflow

KINDS = ["RNN", "GRU", "LSTM"]


def _out(lib, kind, **kwargs):
    lib.manual_seed(0)
    layer = getattr(lib.nn, kind)(3, 4, **kwargs)
    x = lib.zeros(2, 5, 3) if kwargs.get("batch_first") else lib.zeros(5, 2, 3)
    return layer(x)[0]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("kwargs", [{}, {"num_layers": 2}, {"bidirectional": True}, {"proj_size": 2}])
def test_output_node_name_like_torch(kind, kwargs):
    if "proj_size" in kwargs and kind != "LSTM":
        pytest.skip("proj_size is the LSTM's")
    want, got = _out(torch, kind, **kwargs), _out(shardflow, kind, **kwargs)
    assert got.grad_fn.name() == want.grad_fn.name()
    assert repr(got).split("grad_fn=")[1] == repr(want).split("grad_fn=")[1]


@pytest.mark.parametrize("kind", KINDS)
def test_batch_first_output_is_torchs_transposed_view(kind):
    want, got = _out(torch, kind, batch_first=True), _out(shardflow, kind, batch_first=True)
    assert got.stride() == want.stride() and got.is_contiguous() is want.is_contiguous() is False
    assert got.grad_fn.name() == "TransposeBackward0"
    torch.testing.assert_close(torch.from_numpy(got.detach().numpy()), want.detach())
    # the view's gradient reaches the weights as before
    got.sum().backward()
    want.sum().backward()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        want.view(2, -1)
    with pytest.raises(RuntimeError):
        got.view(2, -1)
    assert tuple(got.reshape(2, -1).shape) == (2, 20)
