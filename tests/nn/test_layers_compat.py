"""Layers public PyTorch programs stopped at (issue 27), vs torch 2.13: padding,
PixelShuffle, InstanceNorm, 3-d pooling, EmbeddingBag, CTCLoss, TripletMarginLoss,
Hardshrink/Softshrink and DataParallel. Each builds the same layer in both libraries with
torch's weights and compares outputs, input and parameter gradients and buffers
(``compare`` from test_layers_vs_torch)."""

import warnings
import zlib

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn
from tests.nn import test_layers_vs_torch as tv
from tests.nn.test_layers_vs_torch import compare


@pytest.fixture(autouse=True)
def _per_test_rng(request, monkeypatch):
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))
    monkeypatch.setattr(tv, "RNG", rng)  # compare() draws its output gradient from tv.RNG
    global RNG
    RNG = rng


RNG = np.random.default_rng(0)


def _randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- padding, pixel shuffle
@pytest.mark.parametrize("build, shape", [
    (lambda m: m.ReflectionPad1d(2), (2, 3, 5)),
    (lambda m: m.ReflectionPad1d((1, 3)), (3, 6)),
    (lambda m: m.ReflectionPad2d((1, 0, 2, 1)), (2, 2, 4, 5)),
    (lambda m: m.ReflectionPad3d(1), (1, 2, 3, 3, 4)),
    (lambda m: m.ReplicationPad1d((3, 1)), (2, 2, 4)),
    (lambda m: m.ReplicationPad2d(2), (1, 2, 3, 3)),
    (lambda m: m.ReplicationPad3d((1, 0, 0, 2, 1, 1)), (2, 3, 2, 4)),
    (lambda m: m.ZeroPad1d((2, 0)), (2, 3, 4)),
    (lambda m: m.ZeroPad2d((1, 2, 0, 3)), (2, 2, 3, 3)),
    (lambda m: m.ZeroPad3d(1), (1, 1, 2, 2, 2)),
    (lambda m: m.ConstantPad1d(2, 3.5), (2, 4)),
    (lambda m: m.ConstantPad2d((1, 0, 0, 1), -1.0), (2, 2, 3, 3)),
    (lambda m: m.ConstantPad3d((0, 1, 1, 0, 2, 2), 0.25), (1, 2, 2, 2, 2)),
    (lambda m: m.CircularPad1d(1), (2, 3, 4)),
    (lambda m: m.CircularPad2d((1, 2, 2, 0)), (1, 2, 3, 4)),
    (lambda m: m.CircularPad3d(1), (1, 1, 2, 3, 3)),
    (lambda m: m.PixelShuffle(2), (2, 8, 3, 3)),
    (lambda m: m.PixelShuffle(3), (9, 2, 2)),
    (lambda m: m.PixelUnshuffle(2), (2, 2, 4, 6)),
    (lambda m: m.Sequential(m.PixelUnshuffle(2), m.PixelShuffle(2)), (1, 3, 2, 4, 4)),
])
def test_padding_and_pixel_shuffle_layers(build, shape):
    compare(build, [_randn(*shape)])
    assert repr(build(nn)) == repr(build(torch.nn))


def test_padding_and_pixel_shuffle_errors_match_torch():
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        nn.PixelShuffle(2)(sf.zeros(1, 6, 2, 2))
    with pytest.raises(RuntimeError, match="height to be divisible by downscale_factor"):
        nn.PixelUnshuffle(2)(sf.zeros(1, 1, 3, 4))
    with pytest.raises(ValueError, match="tuple of 4 ints"):
        nn.ReflectionPad2d((1, 2, 3))


# ---------------------------------------------------------------- instance norm
@pytest.mark.parametrize("build, shape", [
    (lambda m: m.InstanceNorm1d(3), (2, 3, 6)),
    (lambda m: m.InstanceNorm1d(3, affine=True), (3, 6)),  # unbatched
    (lambda m: m.InstanceNorm2d(2, affine=True, eps=1e-3), (2, 2, 3, 4)),
    (lambda m: m.InstanceNorm2d(2, track_running_stats=True, momentum=0.3), (3, 2, 4, 4)),
    (lambda m: m.InstanceNorm3d(2, affine=True, track_running_stats=True), (2, 2, 2, 3, 3)),
    (lambda m: m.InstanceNorm3d(2, momentum=None, track_running_stats=True), (2, 2, 3, 2)),  # unbatched
])
def test_instance_norm_layers_train_and_eval(build, shape):
    compare(build, [_randn(*shape)], train=True, steps=2)  # buffers: running stats after two steps
    compare(build, [_randn(*shape)], train=False)
    assert list(build(nn).state_dict()) == list(build(torch.nn).state_dict())


def test_instance_norm_checks_dims_and_features_like_torch():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(2)(sf.zeros(2, 2))
    with pytest.raises(ValueError, match=r"size at dim=1 to match num_features \(3\)"):
        nn.InstanceNorm1d(3, affine=True)(sf.zeros(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(sf.zeros(2, 4, 5))


# ---------------------------------------------------------------- 3-d pooling, shrink activations
@pytest.mark.parametrize("build, shape", [
    (lambda m: m.MaxPool3d(2), (2, 2, 4, 4, 4)),
    (lambda m: m.MaxPool3d((1, 2, 2), stride=(1, 2, 1), padding=(0, 1, 1), ceil_mode=True), (1, 2, 3, 5, 4)),
    (lambda m: m.AvgPool3d(2, stride=1), (2, 2, 3, 3, 3)),
    (lambda m: m.AvgPool3d(3, stride=2, padding=1, count_include_pad=False), (1, 1, 5, 4, 4)),
    (lambda m: m.AdaptiveAvgPool3d((1, 2, 3)), (2, 2, 3, 4, 5)),
    (lambda m: m.AdaptiveMaxPool3d(2), (1, 2, 4, 4, 3)),
    (lambda m: m.Hardshrink(), (4, 6)),
    (lambda m: m.Hardshrink(0.3), (4, 6)),
    (lambda m: m.Softshrink(0.8), (4, 6)),
])
def test_3d_pooling_and_shrink_layers(build, shape):
    x = _randn(*shape)
    x[np.abs(np.abs(x) - 0.5) < 0.05] = 1.0  # keep away from the shrink kinks
    compare(build, [x])


def test_max_pool3d_return_indices_matches_torch():
    x = _randn(1, 2, 4, 4, 4)
    s_out, s_idx = nn.MaxPool3d(2, return_indices=True)(sf.tensor(x))
    t_out, t_idx = torch.nn.MaxPool3d(2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(s_out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(s_idx.numpy(), t_idx.numpy())


# ---------------------------------------------------------------- EmbeddingBag
_BAG_IDS = np.array([1, 2, 4, 5, 4, 3, 2, 0, 7, 7], dtype=np.int64)
_BAG_OFFSETS = np.array([0, 2, 2, 5, 8], dtype=np.int64)  # bags of 2, 0, 3, 3, 2 entries


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_with_offsets(mode, padding_idx):
    compare(lambda m: m.EmbeddingBag(8, 3, mode=mode, padding_idx=padding_idx), [_BAG_IDS],
            kwargs={"offsets": _BAG_OFFSETS})


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_input_and_include_last_offset(mode):
    compare(lambda m: m.EmbeddingBag(8, 4, mode=mode), [_BAG_IDS.reshape(2, 5)])
    compare(lambda m: m.EmbeddingBag(8, 4, mode=mode, include_last_offset=True), [_BAG_IDS],
            kwargs={"offsets": np.append(_BAG_OFFSETS, 10)})


def test_embedding_bag_per_sample_weights_get_gradients():
    psw = RNG.random(10).astype(np.float32)
    torch.manual_seed(0)
    t_bag = torch.nn.EmbeddingBag(8, 3, mode="sum", padding_idx=7)
    s_bag = nn.EmbeddingBag(8, 3, mode="sum", padding_idx=7)
    s_bag.load_state_dict({k: v.numpy() for k, v in t_bag.state_dict().items()})
    res = []
    for lib, bag in ((sf, s_bag), (torch, t_bag)):
        w = lib.tensor(psw, requires_grad=True)
        y = bag(lib.tensor(_BAG_IDS), lib.tensor(_BAG_OFFSETS), per_sample_weights=w)
        (y * lib.tensor(np.arange(15, dtype=np.float32).reshape(5, 3))).sum().backward()
        res.append((y.detach().numpy(), w.grad.numpy(), bag.weight.grad.numpy()))
    for got, want in zip(*res):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert res[0][1][[8, 9]].tolist() == [0.0, 0.0]  # padding entries get no gradient


def test_embedding_bag_scale_grad_by_freq_divides_by_the_true_count():
    """torch 2.13's CPU kernel divides some rows by another index's count
    (pytorch/pytorch#190063); shardflow divides by each index's own count, as torch's CUDA
    kernel and F.embedding do: the bag gradient equals embedding's gradient of the summed rows."""
    w = sf.tensor(_randn(8, 3), requires_grad=True)
    sf.nn.functional.embedding_bag(sf.tensor(_BAG_IDS), w, sf.tensor(_BAG_OFFSETS), mode="sum",
                                   scale_grad_by_freq=True).sum().backward()
    ref = torch.tensor(w.detach().numpy(), requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(_BAG_IDS), ref, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), ref.grad.numpy(), rtol=1e-6)
    assert w.grad.numpy()[7].tolist() == [1.0, 1.0, 1.0]  # index 7 twice, each divided by 2


def test_embedding_bag_errors_match_torch():
    w = sf.zeros(8, 3)
    F = sf.nn.functional
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(sf.tensor(_BAG_IDS.reshape(2, 5)), w, sf.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(sf.tensor(_BAG_IDS), w, sf.tensor([1, 3]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(sf.tensor(_BAG_IDS), w, sf.tensor([0, 3]), mode="mean", per_sample_weights=sf.ones(10))
    with pytest.raises(ValueError, match="max mode does not support scaling"):
        F.embedding_bag(sf.tensor(_BAG_IDS), w, sf.tensor([0, 3]), mode="max", scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="index 9 is out of bounds"):  # torch: RuntimeError too
        F.embedding_bag(sf.tensor([1, 9]), w, sf.tensor([0]))
    with pytest.raises(ValueError, match="must equal the number of indices"):
        F.embedding_bag(sf.tensor(_BAG_IDS), w, sf.tensor([0, 3, 8]), include_last_offset=True)


# ---------------------------------------------------------------- losses
def _ctc_case():
    T, N, C = 8, 3, 5
    x = _randn(T, N, C)
    targets = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 1, 2]], dtype=np.int64)
    return x, targets, np.array([8, 6, 7]), np.array([3, 2, 4])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss_module_forward_backward_vs_torch(reduction, concatenated):
    x, targets, in_len, tgt_len = _ctc_case()
    if concatenated:
        targets = np.concatenate([t[:n] for t, n in zip(targets, tgt_len)])
    res = []
    for lib in (sf, torch):
        logits = lib.tensor(x, requires_grad=True)
        loss = lib.nn.CTCLoss(blank=0, reduction=reduction)(
            logits.log_softmax(2), lib.tensor(targets), lib.tensor(in_len), lib.tensor(tgt_len))
        (loss * lib.tensor(np.arange(1, loss.numel() + 1, dtype=np.float32).reshape(loss.shape))).sum().backward()
        res.append((loss.detach().numpy(), logits.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-4, atol=1e-6)


def test_ctc_loss_gradient_at_log_probs_is_torchs_and_zero_infinity():
    x, targets, _, tgt_len = _ctc_case()
    in_len = np.array([8, 6, 2])  # the third target (4 labels) cannot fit in 2 frames: infinite loss
    res = []
    for lib in (sf, torch):
        lp = lib.tensor(x, requires_grad=True)  # used directly, not through log_softmax
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor(targets), lib.tensor(in_len), lib.tensor(tgt_len),
                                          reduction="none", zero_infinity=True)
        loss.sum().backward()
        res.append((loss.detach().numpy(), lp.grad.numpy()))
    assert res[0][0][2] == 0.0 and not res[0][1][:, 2].any()
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-4, atol=1e-6)
    with pytest.raises(RuntimeError, match="input_lengths"):
        sf.nn.functional.ctc_loss(sf.tensor(x), sf.tensor(targets), [9, 1, 1], [1, 1, 1])


@pytest.mark.parametrize("make", [
    lambda m: m.TripletMarginLoss(),
    lambda m: m.TripletMarginLoss(margin=0.5, p=1, swap=True, reduction="sum"),
    lambda m: m.TripletMarginLoss(margin=2.0, eps=1e-3, reduction="none"),
    lambda m: m.TripletMarginWithDistanceLoss(swap=True),
    lambda m: m.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1.0 - m.functional.cosine_similarity(a, b, dim=-1), margin=0.3, reduction="sum"),
])
@pytest.mark.parametrize("shape", [(5, 4), (4,)])
def test_triplet_margin_losses(make, shape):
    a, p, n = _randn(*shape), _randn(*shape), _randn(*shape)
    res = []
    for lib in (sf, torch):
        ins = [lib.tensor(v, requires_grad=True) for v in (a, p, n)]
        loss = make(lib.nn)(*ins)
        loss.sum().backward()
        res.append([loss.detach().numpy()] + [t.grad.numpy() for t in ins])
    for got, want in zip(*res):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_triplet_margin_loss_checks_like_torch():
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        sf.nn.functional.triplet_margin_loss(sf.zeros(2, 3), sf.zeros(2, 3), sf.zeros(3))


# ---------------------------------------------------------------- DataParallel
def test_data_parallel_is_a_pass_through_with_torchs_state_dict_keys():
    torch.manual_seed(0)
    t_model = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)))
    s_model = nn.DataParallel(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)))
    assert list(s_model.state_dict()) == list(t_model.state_dict())  # 'module.0.weight', ...
    assert s_model.device_ids == t_model.device_ids == []
    s_model.load_state_dict({k: v.numpy() for k, v in t_model.state_dict().items()})
    x = _randn(5, 4)
    np.testing.assert_allclose(s_model(sf.tensor(x)).detach().numpy(), t_model(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    plain = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    plain.load_state_dict(s_model.module.state_dict())  # the wrapped model is .module
    assert isinstance(s_model.module, nn.Sequential) and "DataParallel(" in repr(s_model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on a machine without GPUs
        nn.DataParallel(nn.Linear(2, 2), device_ids=None)


# ---------------------------------------------------------------- the rest of torch.nn (COMPAT gap list)
@pytest.mark.parametrize("build, shapes", [
    (lambda m: m.CosineSimilarity(dim=1), [(4, 5), (4, 5)]),
    (lambda m: m.PairwiseDistance(p=1.5, keepdim=True), [(4, 5), (4, 5)]),
    (lambda m: m.Softmax2d(), [(2, 3, 2, 2)]),
    (lambda m: m.ChannelShuffle(3), [(2, 6, 2, 2)]),
    (lambda m: m.RReLU(0.1, 0.3), [(4, 5)]),  # eval: the mean slope
    (lambda m: m.LocalResponseNorm(3), [(2, 5, 3, 3)]),
    (lambda m: m.LPPool1d(2, 2), [(2, 3, 6)]),
    (lambda m: m.LPPool2d(3, (2, 2), stride=1), [(1, 2, 4, 4)]),
    (lambda m: m.LPPool3d(2, 2), [(1, 1, 4, 4, 4)]),
])
def test_distance_shuffle_lrn_lppool_layers(build, shapes):
    inputs = [_randn(*s) for s in shapes]
    if "LPPool" in type(build(nn)).__name__:
        inputs = [np.abs(x) + 0.1 for x in inputs]  # positive: x^p has a real root
    compare(build, inputs)
    assert repr(build(nn)) == repr(build(torch.nn))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_inverts_max_pool_like_torch(n):
    shape = (2, 3) + (4,) * n
    x = _randn(*shape)
    res = []
    for lib in (sf, torch):
        t = lib.tensor(x, requires_grad=True)
        pool = getattr(lib.nn, f"MaxPool{n}d")(2, return_indices=True)
        unpool = getattr(lib.nn, f"MaxUnpool{n}d")(2)
        out, idx = pool(t)
        y = unpool(out, idx, output_size=t.shape)
        (y * lib.tensor(np.arange(y.numel(), dtype=np.float32).reshape(tuple(y.shape)))).sum().backward()
        res.append((y.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0])
    np.testing.assert_allclose(res[0][1], res[1][1])
    assert repr(nn.MaxUnpool2d(2)) == repr(torch.nn.MaxUnpool2d(2))


@pytest.mark.parametrize("name, make, target", [
    ("GaussianNLLLoss", lambda m: m.GaussianNLLLoss(full=True), "var"),
    ("PoissonNLLLoss", lambda m: m.PoissonNLLLoss(), "count"),
    ("PoissonNLLLoss_full", lambda m: m.PoissonNLLLoss(log_input=False, full=True, reduction="sum"), "count"),
    ("HingeEmbeddingLoss", lambda m: m.HingeEmbeddingLoss(margin=0.5), "sign"),
    ("SoftMarginLoss", lambda m: m.SoftMarginLoss(reduction="none"), "sign"),
    ("MultiLabelSoftMarginLoss", lambda m: m.MultiLabelSoftMarginLoss(), "binary"),
    ("MultiMarginLoss", lambda m: m.MultiMarginLoss(p=2, margin=0.7), "class"),
    ("MultiLabelMarginLoss", lambda m: m.MultiLabelMarginLoss(), "labels"),
    ("NLLLoss2d", lambda m: m.NLLLoss2d(), "class"),
])
def test_remaining_losses(name, make, target):
    x = _randn(4, 5)
    if name == "PoissonNLLLoss_full":
        x = np.abs(x) + 0.2
    t = {"var": _randn(4, 5), "count": RNG.poisson(2.0, (4, 5)).astype(np.float32),
         "sign": np.sign(_randn(4, 5)), "binary": (RNG.random((4, 5)) > 0.5).astype(np.float32),
         "class": RNG.integers(0, 5, 4), "labels": np.array([[3, 0, -1, 1, 1], [1, 2, 4, -1, 0],
                                                               [0, 1, 2, 3, 4], [-1, 1, 2, 3, 4]])}[target]
    var = np.abs(_randn(4, 5)) + 0.1
    res = []
    for lib in (sf, torch):
        xi = lib.tensor(x, requires_grad=True)
        args = (xi, lib.tensor(t)) + ((lib.tensor(var),) if target == "var" else ())
        loss = make(lib.nn)(*args)
        loss.sum().backward()
        res.append((loss.detach().numpy(), xi.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-5, atol=1e-6)


def test_rrelu_and_feature_alpha_dropout_in_training_are_random_and_seeded():
    layer = nn.RReLU(0.1, 0.3).train()
    x = -sf.ones(2000)
    sf.manual_seed(3)
    a = layer(x).numpy()
    sf.manual_seed(3)
    np.testing.assert_array_equal(layer(x).numpy(), a)
    slopes = -a
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    assert np.array_equal(layer(sf.ones(5)).numpy(), np.ones(5))  # positives pass
    drop = nn.FeatureAlphaDropout(0.5).train()
    y = drop(sf.ones(8, 400, 2)).numpy()
    per_channel = y.reshape(8, 400, 2)
    assert (per_channel[..., 0] == per_channel[..., 1]).all()  # whole channels share the mask
    assert repr(nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))
