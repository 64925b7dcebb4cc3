"""``torch.ao.quantization.fuser_method_mappings`` against torch 2.13: post-training fusers give
the same outputs as torch's fused modules, ``get_fuser_method`` finds the same fusers, and the
errors are torch's (QAT forms and missing fused modules refused)."""

import numpy as np
import pytest
import torch
import torch.ao.quantization.fuser_method_mappings as tf

import shardflow as sf
import shardflow.ao.quantization.fuser_method_mappings as sfm

pytestmark = [pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated:DeprecationWarning")]


def _pair(make, seed=0):
    """The same module in both libraries (shardflow's weights copied from torch's), eval mode."""
    torch.manual_seed(seed)
    t = make(torch).eval()
    s = make(sf).eval()
    s.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    if hasattr(t, "running_mean"):  # give the batch norms non-trivial statistics
        with torch.no_grad():
            t.running_mean.uniform_(-1, 1)
            t.running_var.uniform_(0.5, 2)
            t.weight.uniform_(0.5, 1.5)
            t.bias.uniform_(-1, 1)
        s.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, s


@pytest.mark.parametrize("case", ["conv_bn", "conv_bn_relu", "linear_bn", "convt_bn", "conv_relu", "linear_relu"])
def test_post_training_fusers_match_torch(case):
    conv = lambda lib: lib.nn.Conv2d(3, 4, 3, padding=1)  # noqa: E731
    bn2 = lambda lib: lib.nn.BatchNorm2d(4)  # noqa: E731
    mods, fn, x = {
        "conv_bn": ([conv, bn2], "fuse_conv_bn", (2, 3, 5, 5)),
        "conv_bn_relu": ([conv, bn2, lambda lib: lib.nn.ReLU()], "fuse_conv_bn_relu", (2, 3, 5, 5)),
        "linear_bn": ([lambda lib: lib.nn.Linear(3, 4), lambda lib: lib.nn.BatchNorm1d(4)], "fuse_linear_bn", (5, 3)),
        "convt_bn": ([lambda lib: lib.nn.ConvTranspose2d(3, 4, 3, stride=2), bn2], "fuse_convtranspose_bn",
                     (2, 3, 4, 4)),
        "conv_relu": ([conv, lambda lib: lib.nn.ReLU()], None, (2, 3, 5, 5)),
        "linear_relu": ([lambda lib: lib.nn.Linear(3, 4), lambda lib: lib.nn.ReLU()], None, (5, 3)),
    }[case]
    pairs = [_pair(m, i) for i, m in enumerate(mods)]
    t_mods, s_mods = [p[0] for p in pairs], [p[1] for p in pairs]
    types_t, types_s = tuple(type(m) for m in t_mods), tuple(type(m) for m in s_mods)
    t_fn, s_fn = tf.get_fuser_method(types_t), sfm.get_fuser_method(types_s)
    if fn is not None:
        assert t_fn is getattr(tf, fn) and s_fn is getattr(sfm, fn)
    t_fused, s_fused = t_fn(False, *t_mods), s_fn(False, *s_mods)
    assert type(s_fused).__name__ == type(t_fused).__name__
    xv = np.random.default_rng(1).standard_normal(x).astype(np.float32)
    with torch.no_grad():
        expected = t_fused(torch.tensor(xv)).numpy()
    np.testing.assert_allclose(s_fused(sf.tensor(xv)).detach().numpy(), expected, rtol=1e-4, atol=1e-5)


def test_errors_as_torch():
    for lib, m in ((torch, tf), (sf, sfm)):
        with pytest.raises(AssertionError, match=r"did not find fuser method for: \("):
            m.get_fuser_method((lib.nn.ReLU, lib.nn.Linear))
        conv, bn = lib.nn.Conv2d(1, 1, 1), lib.nn.BatchNorm2d(1).eval()
        with pytest.raises(AssertionError, match="Conv and BN both must be in the same mode"):
            m.fuse_conv_bn(False, conv, bn)
        with pytest.raises(Exception, match="Fusing ConvTranspose\\+BatchNorm not yet supported in QAT"):
            m.fuse_convtranspose_bn(True, lib.nn.ConvTranspose2d(1, 1, 1), lib.nn.BatchNorm2d(1))
    assert sfm.get_fuser_method((sf.nn.Linear, sf.nn.ReLU), {(sf.nn.ReLU, sf.nn.Linear): "mine"}) is not None
    assert sfm.get_fuser_method((sf.nn.ReLU, sf.nn.Linear), {(sf.nn.ReLU, sf.nn.Linear): "mine"}) == "mine"


@pytest.mark.parametrize("call", [
    lambda: sfm.fuse_conv_bn(True, sf.nn.Conv2d(1, 1, 1), sf.nn.BatchNorm2d(1)),
    lambda: sfm.fuse_linear_bn(True, sf.nn.Linear(1, 1), sf.nn.BatchNorm1d(1)),
    lambda: sfm.fuse_conv_bn_relu(False, sf.nn.Conv1d(1, 1, 1).eval(), sf.nn.BatchNorm1d(1).eval(), sf.nn.ReLU().eval()),
    lambda: sfm.get_fuser_method((sf.nn.BatchNorm2d, sf.nn.ReLU))(False, sf.nn.BatchNorm2d(1), sf.nn.ReLU()),
])
def test_forms_not_built_say_so(call):
    with pytest.raises(NotImplementedError, match="is not built in shardflow"):
        call()


def test_paths():
    from shardflow.quantization.fuser_method_mappings import get_fuser_method

    assert get_fuser_method is sfm.get_fuser_method is sf.ao.quantization.get_fuser_method
    assert sf.ao.quantization.fuse_linear_bn is sfm.fuse_linear_bn
