"""torchvision's model definitions (``tests/parity/programs/torchvision_models/``, the files
users copy from pytorch/vision) built on torch and, with only their imports changed, on
shardflow, from the same ``manual_seed`` with no weight copying: ``print(model)`` and the
``state_dict`` keys equal, the eval-mode forward equal, and two SGD steps (train mode: batch
statistics, dropout, stochastic depth drawn by both from the same seed) give the same losses
and gradients.

Why the training steps run in float64: at batch 2 on 32x32 inputs the last stages of these
nets are 1x1 (or 2x2) maps, so a train-mode BatchNorm normalises 2 to 8 values per channel
and amplifies rounding. Measured in float32: the eval forwards agree to 7e-7 (relative), but
the first train-mode loss of resnet18 differs by 2e-5 and mobilenet_v2's by 7e-4 (the
per-layer difference grows from 2e-7 at the stem to 1e-5 in ``features.8``, each BatchNorm
over fewer values multiplying it), and after one SGD step the second losses differ in the
first digit. In float64 both frameworks draw the same initial weights, the eval forwards
agree to 2e-15 and the first step's loss to 3e-15 and its gradients to 1e-12 of their scale
(torch against itself with its input scaled by 1 + 1e-15 moves its gradients by 8e-13: this
is the nets' conditioning, not a difference in the math); the second step amplifies that
1e-13 weight difference to 1e-9 in the loss and 1e-6 in the gradients (torch against itself,
input scaled by 1 + 1e-12: 7e-8), hence rtol 1e-7 on the losses and 1e-6 of the largest
gradient on the gradients. ConvNeXt (LayerNorm, no BatchNorm) is checked in float32 at
1e-5.
"""

import numpy as np
import pytest
import torch

import shardflow

from .programs import torchvision_models

pytestmark = pytest.mark.usefixtures("torch_single_thread")


def _run(lib, build, dtype=None, steps=2, size=32, lr=0.1):
    """Build the model from seed 0, then record its repr, state_dict keys, the eval forward
    and ``steps`` SGD steps' losses and final gradients on a fixed batch of 2."""
    tv = torchvision_models.load(lib is shardflow)
    if dtype is not None:
        lib.set_default_dtype(getattr(lib, dtype))  # the parity conftest puts it back
    lib.manual_seed(0)
    model = build(tv.models)
    text, keys = str(model), list(model.state_dict())
    x = lib.randn(2, 3, size, size)
    y = lib.tensor([1, 3])
    model.eval()
    with lib.no_grad():
        evaluated = model(x).numpy().copy()
    model.train()
    opt = lib.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters() if p.grad is not None}
    return {"text": text, "keys": keys, "eval": evaluated, "losses": losses, "grads": grads,
            "formatted": f"{loss:.4f} {loss.item():.6f}"}


def _check(build, dtype=None, rtol=1e-5, grad_rtol=1e-5, size=32, lr=0.1):
    th, sf = _run(torch, build, dtype, size=size, lr=lr), _run(shardflow, build, dtype, size=size, lr=lr)
    assert sf["text"] == th["text"]
    assert sf["keys"] == th["keys"]
    np.testing.assert_allclose(sf["eval"], th["eval"], rtol=1e-5, atol=1e-6 * np.abs(th["eval"]).max())
    np.testing.assert_allclose(sf["losses"], th["losses"], rtol=rtol)
    assert sf["grads"].keys() == th["grads"].keys()
    # the scale is the largest gradient entry of the model: some gradients are rounding
    # noise around an exact zero (a BatchNorm feeding a 1x1 map's BatchNorm: 1e-16)
    scale = max(np.abs(g).max() for g in th["grads"].values())
    for k, g in th["grads"].items():
        np.testing.assert_allclose(sf["grads"][k], g, rtol=grad_rtol, atol=grad_rtol * scale, err_msg=k)
    assert th["losses"][0] != th["losses"][1]  # the step moved the weights
    return th, sf


def test_resnet_basic_block():
    """torchvision's ResNet with BasicBlock (resnet18's block, one per stage instead of two
    to keep the test fast: 4.9M parameters), kaiming-normal initial weights."""
    _check(lambda m: m.resnet.ResNet(m.resnet.BasicBlock, [1, 1, 1, 1], num_classes=10),
           dtype="float64", rtol=1e-7, grad_rtol=1e-6)


def test_resnet_bottleneck():
    """torchvision's ResNet with Bottleneck (resnet50's block), one per stage."""
    _check(lambda m: m.resnet.ResNet(m.resnet.Bottleneck, [1, 1, 1, 1], num_classes=10),
           dtype="float64", rtol=1e-7, grad_rtol=1e-6)


def test_mobilenet_v2():
    """MobileNetV2 (width 0.25): ReLU6, depthwise convolutions, inverted residuals,
    classifier Dropout(0.2) in train mode drawn from the same seed."""
    _check(lambda m: m.mobilenetv2.mobilenet_v2(num_classes=10, width_mult=0.25),
           dtype="float64", rtol=1e-7, grad_rtol=1e-6)


def test_convnext_stochastic_depth():
    """ConvNeXt (two stages of two blocks, dims 8/16): LayerNorm2d, Permute, GELU, layer
    scale, and StochasticDepth(p up to 0.5, "row") whose ``bernoulli_`` masks both draw from
    the same seed; ``torch.fx.wrap("stochastic_depth")`` at the top of the vendored
    ``ops/stochastic_depth.py`` (the string form) runs on import. float32 throughout."""
    def build(m):
        cfg = m.convnext.CNBlockConfig
        return m.convnext.ConvNeXt([cfg(8, 16, 2), cfg(16, None, 2)], stochastic_depth_prob=0.5,
                                   num_classes=10)

    th, sf = _check(build, rtol=1e-5, grad_rtol=1e-5)
    assert sf["formatted"] == th["formatted"]


def test_mobilenet_v3_small():
    """MobileNetV3-Small (width 0.5): Conv2dNormActivation, SqueezeExcitation with
    Hardsigmoid, Hardswish, BatchNorm(eps=1e-3, momentum=0.01), in-place Dropout(0.2)."""
    _check(lambda m: m.mobilenetv3.mobilenet_v3_small(num_classes=10, width_mult=0.5),
           dtype="float64", rtol=1e-7, grad_rtol=1e-6)


def test_shufflenet_v2_x0_5():
    """shufflenet_v2_x0_5 as torchvision builds it: channel_shuffle (view, transpose,
    contiguous), chunk, depthwise convolutions, ``x.mean([2, 3])``. On 64x64 inputs: at
    32x32 its last stage and conv5 (1024 channels) are 1x1 maps, and the second step's
    gradients differ by 3% in float64 (the first step's by 3e-11 of their scale, torch
    against itself with its input scaled by 1 + 1e-15: 2e-11); at 64x64, 4e-10."""
    _check(lambda m: m.shufflenetv2.shufflenet_v2_x0_5(num_classes=10),
           dtype="float64", rtol=1e-7, grad_rtol=1e-6, size=64)


def test_swin_transformer_v1_and_v2():
    """SwinTransformer (patch 2, dim 16, depths [2, 2], window 4 on a 16x16 map: the second
    block of each stage shifts its windows, so ``torch.roll`` and the -100 attention mask
    run), with StochasticDepth(p up to 0.5); then the V2 block (cosine attention with a
    clamped logit scale, the log-spaced continuous position bias MLP, PatchMergingV2).
    LayerNorm only, so float32. ``torch.fx.wrap`` of three functions runs on import."""
    def v1(m):
        return m.swin_transformer.SwinTransformer([2, 2], 16, [2, 2], [2, 4], [4, 4],
                                                   stochastic_depth_prob=0.5, num_classes=10)

    def v2(m):
        sw = m.swin_transformer
        return sw.SwinTransformer([2, 2], 16, [2, 2], [2, 4], [4, 4], stochastic_depth_prob=0.5,
                                  num_classes=10, block=sw.SwinTransformerBlockV2,
                                  downsample_layer=sw.PatchMergingV2)

    _check(v1, rtol=1e-5, grad_rtol=1e-5)
    _check(v2, rtol=1e-5, grad_rtol=1e-5)


# efficientnet.py and vision_transformer.py at their commits build ``ConvNormActivation``
# (the name before torchvision 0.13 split it into Conv2d/Conv3dNormActivation); the vendored
# ops/misc.py is the later one, which warns about that use
_OLD_NAME = "ignore:Don't use ConvNormActivation directly"


@pytest.mark.filterwarnings(_OLD_NAME)
def test_efficientnet_stochastic_depth():
    """torchvision's ``_efficientnet`` builder with EfficientNet-B0's stage table at width
    0.25 and depth 0.5 (its own ``MBConvConfig`` rounding): SiLU, SqueezeExcitation with an
    in-place SiLU, StochasticDepth (p up to 0.5, only on residual blocks) drawn from the same
    seed, in-place classifier Dropout(0.2). float64 (BatchNorm on 1x1 maps: module
    docstring)."""
    _check(lambda m: m.efficientnet._efficientnet("efficientnet_b0", 0.25, 0.5, 0.2, False, True,
                                                   num_classes=10, stochastic_depth_prob=0.5),
           dtype="float64", rtol=1e-7, grad_rtol=1e-6)


@pytest.mark.filterwarnings(_OLD_NAME)
def test_vision_transformer():
    """VisionTransformer (32x32 images, 8x8 patches, 2 layers, 2 heads, width 16) with dropout
    and attention dropout 0.1 drawn from the same seed: ``nn.MultiheadAttention(batch_first=
    True)`` called with ``need_weights=False``, ``torch._assert``, the class token, the
    zero-initialised head; then with the conv stem (ConvStemConfig) and a representation
    layer (Tanh pre-logits)."""
    vit = "vision_transformer"
    _check(lambda m: getattr(m, vit).VisionTransformer(32, 8, 2, 2, 16, 32, dropout=0.1,
                                                       attention_dropout=0.1, num_classes=10))
    _check(lambda m: getattr(m, vit).VisionTransformer(
        32, 8, 2, 2, 16, 32, num_classes=10, representation_size=12,
        conv_stem_configs=[getattr(m, vit).ConvStemConfig(8, 3, 2), getattr(m, vit).ConvStemConfig(8, 3, 4)]))


def test_squeezenet1_1():
    """squeezenet1_1: Fire modules (1x1 and 3x3 expands concatenated), ceil_mode max pools,
    kaiming_uniform_ initial weights, Dropout(0.5) from the same seed, a ReLU before the
    global pool. lr 0.01: at 0.1 the second loss falls to 1e-5, where cross-entropy's
    relative rounding is 1e-4 in either framework."""
    _check(lambda m: m.squeezenet.squeezenet1_1(num_classes=10), lr=0.01)


def test_densenet_2017_file():
    """The 2017 densenet.py (``nn.init.kaiming_normal`` without underscore, ``.data.fill_``,
    ``add_module`` calls, ``import torch.utils.model_zoo``) with growth 4, bn_size 2, two
    dense blocks and dropout 0.2 after each dense layer (``F.dropout``, same seed); its
    ``F.avg_pool2d(kernel_size=7)`` head needs a 7x7 final map, so 2x3x56x56 inputs.
    BatchNorm over 98 values per channel at the end: float32 at 1e-5."""
    _check(lambda m: m.densenet.DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8,
                                         bn_size=2, drop_rate=0.2, num_classes=10), size=56)


def _googlenet_run(lib):
    """GoogLeNet's train mode returns ``GoogLeNetOutputs(logits, aux_logits2, aux_logits1)``;
    the loss is torchvision's reference recipe's: main + 0.3 x each auxiliary loss."""
    tv = torchvision_models.load(lib is shardflow)
    lib.set_default_dtype(lib.float64)  # the parity conftest puts it back
    lib.manual_seed(0)
    model = tv.models.googlenet.googlenet(num_classes=10, init_weights=True)
    text = str(model)
    x, y = lib.randn(2, 3, 32, 32), lib.tensor([1, 3])
    model.eval()
    with lib.no_grad():
        evaluated = model(x)  # a plain tensor in eval mode
    model.train()
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses, F = [], lib.nn.functional
    for _ in range(2):
        opt.zero_grad()
        out = model(x)
        loss = (F.cross_entropy(out.logits, y) + 0.3 * F.cross_entropy(out.aux_logits1, y)
                + 0.3 * F.cross_entropy(out.aux_logits2, y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters()}
    return text, evaluated.numpy().copy(), (type(out).__name__, out._fields), losses, grads


def test_googlenet_aux_logits():
    """GoogLeNet with its two auxiliary heads (``F.dropout(x, 0.7)`` in each, Dropout(0.2)
    before ``fc``, from the same seed), ``trunc_normal_(std=0.01, a=-2, b=2)`` initial
    weights, ceil_mode pools; full width (its sizes are fixed), float64 as the BatchNorm nets
    (module docstring)."""
    th, sf = _googlenet_run(torch), _googlenet_run(shardflow)
    assert sf[0] == th[0] and sf[2] == th[2] == ("GoogLeNetOutputs", ("logits", "aux_logits2", "aux_logits1"))
    np.testing.assert_allclose(sf[1], th[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sf[3], th[3], rtol=1e-7)
    scale = max(np.abs(g).max() for g in th[4].values())
    for k, g in th[4].items():
        np.testing.assert_allclose(sf[4][k], g, rtol=1e-6, atol=1e-6 * scale, err_msg=k)


def test_mnasnet_and_its_versioned_state_dict():
    """MNASNet (alpha 0.25; BatchNorm momentum 0.0003, ``x.mean([2, 3])``, in-place Dropout),
    float64 as the BatchNorm nets; then its ``_load_from_state_dict``, which reads the
    checkpoint's version from ``state_dict()._metadata``: the model's own state dict loads,
    a plain dict (no metadata) raises its ValueError, and a version-1 checkpoint swaps in
    the old stem with its warning, in both frameworks."""
    _check(lambda m: m.mnasnet.MNASNet(0.25, num_classes=10), dtype="float64", rtol=1e-7, grad_rtol=1e-6)
    for lib in (torch, shardflow):
        model = torchvision_models.load(lib is shardflow).models.mnasnet.MNASNet(0.25, num_classes=10)
        state = model.state_dict()
        assert state._metadata[""] == {"version": 2}
        assert str(model.load_state_dict(state)) == "<All keys matched successfully>"
        with pytest.raises(ValueError, match="instead of None"):
            model.load_state_dict(dict(state))
        state._metadata[""] = {"version": 1}
        with pytest.warns(UserWarning, match="new version of MNASNet"), pytest.raises(RuntimeError, match="size mismatch"):
            model.load_state_dict(state)
        assert model._version == 1 and model.layers[0].out_channels == 32
