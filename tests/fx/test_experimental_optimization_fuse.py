"""``torch.fx.experimental.optimization.fuse`` (missing before; the performance tuning
guide's CPU-autocast section folds Conv-BatchNorm with it): the fused GraphModule prints and
reads as torch's, computes the eval-mode model's outputs, and leaves a batch norm whose input
is used twice, or that tracks no statistics, in place."""

import numpy as np
import pytest
import torch
import torch.fx.experimental.optimization

import shardflow
import shardflow.fx.experimental.optimization


def _model(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.bn = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 4, 1)
            self.bn2 = nn.BatchNorm2d(4, track_running_stats=False)
            self.fc = nn.Linear(4, 5)
            self.bn1d = nn.BatchNorm1d(5)

        def forward(self, x):
            y = self.bn(self.conv(x)).relu()
            y = self.bn2(self.conv2(y))
            return self.bn1d(self.fc(y.mean((2, 3))))

    return Net()


def test_fuse_like_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)
    results = []
    for lib in (torch, shardflow):
        lib.manual_seed(0)
        model = _model(lib)
        with lib.no_grad():  # running statistics that are not the defaults
            for bn in (model.bn, model.bn1d):
                bn.running_mean.uniform_(-1, 1)
                bn.running_var.uniform_(0.5, 2)
        model.eval()
        fused = lib.fx.experimental.optimization.fuse(model)
        results.append((repr(fused), fused.code, fused(lib.tensor(x)).detach().numpy(),
                        model(lib.tensor(x)).detach().numpy(), hasattr(model, "bn")))
    (th_repr, th_code, th_out, th_ref, th_kept), (sf_repr, sf_code, sf_out, sf_ref, sf_kept) = results
    assert sf_repr == th_repr and "(bn2): BatchNorm2d" in th_repr and "(bn):" not in th_repr
    assert sf_code == th_code
    np.testing.assert_allclose(sf_out, th_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sf_out, sf_ref, rtol=1e-5, atol=1e-6)
    assert sf_kept and th_kept  # not in place: the model keeps its batch norms


def test_fuse_needs_eval_mode_as_torch():
    for lib in (torch, shardflow):
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.fx.experimental.optimization.fuse(lib.nn.Sequential(lib.nn.Conv2d(1, 1, 1), lib.nn.BatchNorm2d(1)))
