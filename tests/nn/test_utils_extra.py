"""torch.nn.utils additions against torch 2.13: get_total_norm / clip_grads_with_norm_ /
clip_grad_norm, conv/linear + BatchNorm fusion, skip_init and the conv weight memory-format
converters."""

import math

import numpy as np
import pytest
import torch

import shardflow
from shardflow.nn import utils as U

SHAPES = [(4, 3), (5,), (2, 3, 2)]


def _grads(seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    arrs = [(scale * rng.standard_normal(s)).astype(np.float32) for s in SHAPES]
    sf = [shardflow.tensor(np.zeros(s, np.float32), requires_grad=True) for s in SHAPES]
    th = [torch.zeros(s, requires_grad=True) for s in SHAPES]
    for p, q, a in zip(sf, th, arrs):
        p.grad, q.grad = shardflow.tensor(a), torch.tensor(a)
    return sf, th


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3, math.inf, 0.5])
def test_get_total_norm_matches_torch(norm_type):
    sf, th = _grads()
    a = U.get_total_norm([p.grad for p in sf], norm_type)
    b = torch.nn.utils.get_total_norm([q.grad for q in th], norm_type)
    assert a.dtype == shardflow.float32 and a.shape == ()
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-6)
    assert U.get_total_norm([]).item() == torch.nn.utils.get_total_norm([]).item() == 0.0
    np.testing.assert_allclose(U.get_total_norm(sf[0].grad).item(),
                               torch.nn.utils.get_total_norm(th[0].grad).item(), rtol=1e-6)


def test_get_total_norm_nonfinite_error_like_torch():
    sf, th = _grads()
    sf[1].grad.array[0] = np.inf
    th[1].grad[0] = math.inf
    assert math.isinf(U.get_total_norm([p.grad for p in sf]).item())
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        torch.nn.utils.get_total_norm([q.grad for q in th], error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        U.get_total_norm([p.grad for p in sf], error_if_nonfinite=True)


@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_two_part_clipping_matches_torch_and_clip_grad_norm_(max_norm):
    sf, th = _grads(scale=2.0)
    total = U.get_total_norm([p.grad for p in sf])
    U.clip_grads_with_norm_(sf, max_norm, total)
    torch.nn.utils.clip_grads_with_norm_(th, max_norm, torch.nn.utils.get_total_norm([q.grad for q in th]))
    for p, q in zip(sf, th):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)
    ref, _ = _grads(scale=2.0)
    U.clip_grad_norm_(ref, max_norm)
    for p, r in zip(sf, ref):
        np.testing.assert_allclose(p.grad.numpy(), r.grad.numpy(), rtol=1e-6)
    U.clip_grads_with_norm_([shardflow.tensor([1.0], requires_grad=True)], 1.0, 2.0)  # no grads: nothing


def test_clip_grad_norm_is_the_deprecated_alias():
    sf, th = _grads(scale=3.0)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated in favor of"):
        a = U.clip_grad_norm(sf, 1.0)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated in favor of"):
        b = torch.nn.utils.clip_grad_norm(th, 1.0)
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-6)
    for p, q in zip(sf, th):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)


def _copy_into(sf_mod, th_mod):
    sf_mod.load_state_dict({k: shardflow.tensor(v.detach().numpy()) for k, v in th_mod.state_dict().items()})


def _trained_bn(th_bn, shape):
    th_bn.train()
    with torch.no_grad():
        for i in range(3):  # running stats away from 0/1
            th_bn(torch.randn(shape) * (1 + i) + i)
        th_bn.weight.uniform_(0.5, 1.5)
        th_bn.bias.uniform_(-1, 1)
    return th_bn.eval()


@pytest.mark.parametrize("kind,bias", [("Conv2d", True), ("Conv2d", False), ("ConvTranspose2d", True),
                                       ("Conv1d", True)])
def test_fuse_conv_bn_eval_matches_torch(kind, bias):
    torch.manual_seed(0)
    d = 2 if kind.endswith("2d") else 1
    th_conv = getattr(torch.nn, kind)(3, 4, 3, bias=bias).eval()
    th_bn = _trained_bn(getattr(torch.nn, f"BatchNorm{d}d")(4), (6, 4) + (5,) * d)
    sf_conv = getattr(shardflow.nn, kind)(3, 4, 3, bias=bias).eval()
    sf_bn = getattr(shardflow.nn, f"BatchNorm{d}d")(4).eval()
    _copy_into(sf_conv, th_conv)
    _copy_into(sf_bn, th_bn)
    transpose = kind.startswith("ConvTranspose")
    fused_th = torch.nn.utils.fuse_conv_bn_eval(th_conv, th_bn, transpose=transpose)
    fused_sf = U.fuse_conv_bn_eval(sf_conv, sf_bn, transpose=transpose)
    assert isinstance(fused_sf.weight, shardflow.nn.Parameter) and fused_sf is not sf_conv
    np.testing.assert_allclose(fused_sf.weight.numpy(), fused_th.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused_sf.bias.numpy(), fused_th.bias.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert fused_sf.bias.requires_grad == fused_th.bias.requires_grad
    x = np.random.default_rng(0).standard_normal((2, 3) + (7,) * d).astype(np.float32)
    with shardflow.no_grad():
        np.testing.assert_allclose(fused_sf(shardflow.tensor(x)).numpy(),
                                   sf_bn(sf_conv(shardflow.tensor(x))).numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(sf_conv.weight.numpy(), th_conv.weight.detach().numpy())  # untouched


@pytest.mark.parametrize("num_features", [5, 1])
def test_fuse_linear_bn_eval_matches_torch(num_features):
    torch.manual_seed(1)
    th_lin = torch.nn.Linear(3, 5).eval()
    th_bn = _trained_bn(torch.nn.BatchNorm1d(num_features), (8, num_features))
    sf_lin, sf_bn = shardflow.nn.Linear(3, 5).eval(), shardflow.nn.BatchNorm1d(num_features).eval()
    _copy_into(sf_lin, th_lin)
    _copy_into(sf_bn, th_bn)
    fused_th = torch.nn.utils.fuse_linear_bn_eval(th_lin, th_bn)
    fused_sf = U.fuse_linear_bn_eval(sf_lin, sf_bn)
    np.testing.assert_allclose(fused_sf.weight.numpy(), fused_th.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused_sf.bias.numpy(), fused_th.bias.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_fusion_errors_like_torch():
    lin, bn = shardflow.nn.Linear(3, 5), shardflow.nn.BatchNorm1d(4)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        U.fuse_linear_bn_eval(lin, bn)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features or bn.num_features == 1, "
                                             "got linear.out_features=5 and bn.num_features=4"):
        U.fuse_linear_bn_eval(lin.eval(), bn.eval())
    nostats = shardflow.nn.BatchNorm2d(4, track_running_stats=False).eval()
    with pytest.raises(AssertionError, match="bn.running_mean and bn.running_var must not be None"):
        U.fuse_conv_bn_eval(shardflow.nn.Conv2d(2, 4, 1).eval(), nostats)


def test_fuse_weights_without_conv_bias_or_affine_like_torch():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    rm, rv = rng.standard_normal(4).astype(np.float32), rng.uniform(0.5, 2, 4).astype(np.float32)
    a = U.fuse_conv_bn_weights(shardflow.tensor(w, requires_grad=True), None, shardflow.tensor(rm),
                               shardflow.tensor(rv), 1e-5, None, None)
    b = torch.nn.utils.fuse_conv_bn_weights(torch.tensor(w, requires_grad=True), None, torch.tensor(rm),
                                            torch.tensor(rv), 1e-5, None, None)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.numpy(), y.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert x.requires_grad == y.requires_grad


def test_skip_init_builds_without_initialising_like_torch():
    lin = U.skip_init(shardflow.nn.Linear, 4, 3)
    ref = torch.nn.utils.skip_init(torch.nn.Linear, 4, 3)
    assert lin.weight.shape == tuple(ref.weight.shape) and str(lin.weight.device) == "cpu"
    assert isinstance(lin.weight, shardflow.nn.Parameter) and lin.weight.requires_grad

    class NoDevice(shardflow.nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        U.skip_init(NoDevice, 3)
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        U.skip_init(int, 3)


def test_convert_conv_weight_memory_format_lays_weights_out_as_torch():
    model = shardflow.nn.Sequential(shardflow.nn.Conv2d(2, 3, 3), shardflow.nn.ReLU(), shardflow.nn.ConvTranspose2d(3, 2, 3))
    th = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU(), torch.nn.ConvTranspose2d(3, 2, 3))
    before, weight = model[0].weight.numpy().copy(), model[0].weight
    assert U.convert_conv2d_weight_memory_format(model, shardflow.channels_last) is model
    assert torch.nn.utils.convert_conv2d_weight_memory_format(th, torch.channels_last) is th
    assert model[0].weight is weight  # in place, the same Parameter
    for i in (0, 2):
        assert model[i].weight.stride() == th[i].weight.stride() != tuple(torch.empty(th[i].weight.shape).stride())
    np.testing.assert_array_equal(model[0].weight.numpy(), before)
    conv3 = shardflow.nn.Sequential(shardflow.nn.Conv3d(2, 3, 3))
    th3 = torch.nn.Sequential(torch.nn.Conv3d(2, 3, 3))
    U.convert_conv3d_weight_memory_format(conv3, shardflow.channels_last_3d)
    torch.nn.utils.convert_conv3d_weight_memory_format(th3, torch.channels_last_3d)
    assert conv3[0].weight.stride() == th3[0].weight.stride()
    for lib, mod in ((torch, th3), (shardflow, conv3)):  # channels_last wants 4-d weights
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            lib.nn.utils.convert_conv3d_weight_memory_format(mod, lib.channels_last)
    with pytest.raises(TypeError, match="memory_format must be a torch.memory_format"):
        U.convert_conv2d_weight_memory_format(model, "channels_last")
