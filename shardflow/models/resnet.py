"""ResNets (He et al. 2016).

* ``variant="imagenet"`` (ResNet-18/34 with BasicBlocks, 50/101/152 with Bottlenecks):
  torchvision's layout and parameter names (``conv1, bn1, layer1.0.conv1 ..., downsample.0/1,
  fc``): 7x7/2 conv, 3x3/2 max-pool, four stages of widths 64..512 (x4 for Bottlenecks,
  stride 2 in the 3x3 conv of the first block of stages 2-4), global average pool, fc.
* ``variant="cifar"`` (ResNet-20/32/44/56/110, depth = 6n + 2): 3x3 conv to 16 channels,
  three stages of n BasicBlocks with 16/32/64 channels, global average pool, fc. The
  shortcut that changes shape is the paper's option A: subsample by 2 and zero-pad the
  channels (no parameters), giving ResNet-20's 0.27M parameters.

BatchNorm after every conv; the last BN of each residual branch starts at gamma=1 (the
paper's choice; ``zero_init_residual=True`` sets it to 0 as in Goyal et al.). Convs use
Kaiming-normal (fan_out, relu) initialisation as torchvision does.
"""

from __future__ import annotations

from dataclasses import dataclass

import shardflow.nn as nn
from shardflow.nn import functional as F

from ._common import conv_flops, conv_out, count_parameters, linear_flops, scale

__all__ = ["ResNetConfig", "ResNet", "resnet18", "resnet50", "resnet20"]

_IMAGENET = {18: ("basic", [2, 2, 2, 2]), 34: ("basic", [3, 4, 6, 3]),
             50: ("bottleneck", [3, 4, 6, 3]), 101: ("bottleneck", [3, 4, 23, 3]),
             152: ("bottleneck", [3, 8, 36, 3])}


@dataclass
class ResNetConfig:
    depth: int = 18
    variant: str = "imagenet"  # "imagenet" | "cifar"
    num_classes: int = 1000
    in_channels: int = 3
    image_size: int = 224
    zero_init_residual: bool = False

    def __post_init__(self):
        if self.variant == "imagenet":
            if self.depth not in _IMAGENET:
                raise ValueError(f"ImageNet ResNet depth must be one of {sorted(_IMAGENET)}, got {self.depth}")
        elif self.variant == "cifar":
            if self.depth < 8 or (self.depth - 2) % 6:
                raise ValueError(f"CIFAR ResNet depth must be 6n+2 (20, 32, 44, 56, 110), got {self.depth}")
        else:
            raise ValueError(f"ResNetConfig.variant must be 'imagenet' or 'cifar', got {self.variant!r}")
        if self.num_classes <= 0 or self.in_channels <= 0 or self.image_size <= 0:
            raise ValueError("ResNetConfig num_classes, in_channels and image_size must be positive")


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(cin, planes, stride), nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2, self.bn2 = conv3x3(planes, planes), nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, planes, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = conv3x3(planes, planes, stride), nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class PadShortcut(nn.Module):
    """Option A shortcut: ``x[:, :, ::2, ::2]`` zero-padded with ``pad`` channels each side."""

    def __init__(self, pad: int):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))


class ResNet(nn.Module):
    def __init__(self, config: ResNetConfig | None = None, **kwargs):
        super().__init__()
        self.config = c = config or ResNetConfig(**kwargs)
        if c.variant == "imagenet":
            kind, layers = _IMAGENET[c.depth]
            block = BasicBlock if kind == "basic" else Bottleneck
            self.inplanes = 64
            self.conv1 = nn.Conv2d(c.in_channels, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, 64, layers[0])
            self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
            self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
            self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
            self.fc = nn.Linear(512 * block.expansion, c.num_classes)
        else:
            n = (c.depth - 2) // 6
            self.inplanes = 16
            self.conv1 = conv3x3(c.in_channels, 16)
            self.bn1 = nn.BatchNorm2d(16)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = self._make_layer(BasicBlock, 16, n, option_a=True)
            self.layer2 = self._make_layer(BasicBlock, 32, n, stride=2, option_a=True)
            self.layer3 = self._make_layer(BasicBlock, 64, n, stride=2, option_a=True)
            self.fc = nn.Linear(64, c.num_classes)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        if c.zero_init_residual:
            for m in self.modules():
                last = getattr(m, "bn3", None) if isinstance(m, Bottleneck) else getattr(m, "bn2", None)
                if isinstance(m, BasicBlock | Bottleneck) and last is not None:
                    nn.init.zeros_(last.weight)

    def _make_layer(self, block, planes, blocks, stride=1, option_a=False):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            if option_a:
                downsample = PadShortcut(planes // 4)
            else:
                downsample = nn.Sequential(
                    nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes * block.expansion),
                )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        if self.config.variant == "imagenet":
            x = self.maxpool(x)
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        else:
            x = self.layer3(self.layer2(self.layer1(x)))
        x = self.avgpool(x).flatten(1)  # (B, C)
        return self.fc(x)

    def num_parameters(self) -> int:
        return count_parameters(self)

    def flops_per_sample(self, image_size: int | None = None, training: bool = False) -> int:
        """Convolution and fc FLOPs for one image, walking the spatial sizes stage by stage."""
        c = self.config
        s = image_size or c.image_size
        if c.variant == "imagenet":
            kind, layers = _IMAGENET[c.depth]
            s1 = conv_out(s, 7, 2, 3)
            f = conv_flops(c.in_channels, 64, 7, s1, s1)
            s = conv_out(s1, 3, 2, 1)
            cin, exp = 64, 1 if kind == "basic" else 4
            for stage, (planes, n) in enumerate(zip((64, 128, 256, 512), layers)):
                for b in range(n):
                    stride = 2 if (b == 0 and stage > 0) else 1
                    so = conv_out(s, 3, stride, 1)
                    if kind == "basic":
                        f += conv_flops(cin, planes, 3, so, so) + conv_flops(planes, planes, 3, so, so)
                    else:
                        f += conv_flops(cin, planes, 1, s, s) + conv_flops(planes, planes, 3, so, so)
                        f += conv_flops(planes, planes * 4, 1, so, so)
                    if b == 0 and (stride != 1 or cin != planes * exp):
                        f += conv_flops(cin, planes * exp, 1, so, so)
                    cin, s = planes * exp, so
            f += linear_flops(512 * exp, c.num_classes)
        else:
            n = (c.depth - 2) // 6
            f = conv_flops(c.in_channels, 16, 3, s, s)
            cin = 16
            for stage, planes in enumerate((16, 32, 64)):
                for b in range(n):
                    stride = 2 if (b == 0 and stage > 0) else 1
                    so = conv_out(s, 3, stride, 1)
                    f += conv_flops(cin, planes, 3, so, so) + conv_flops(planes, planes, 3, so, so)
                    cin, s = planes, so
            f += linear_flops(64, c.num_classes)
        return scale(f, training)


def resnet18(num_classes: int = 1000, **kw) -> ResNet:
    return ResNet(ResNetConfig(depth=18, num_classes=num_classes, **kw))


def resnet50(num_classes: int = 1000, **kw) -> ResNet:
    return ResNet(ResNetConfig(depth=50, num_classes=num_classes, **kw))


def resnet20(num_classes: int = 10, **kw) -> ResNet:
    return ResNet(ResNetConfig(depth=20, variant="cifar", num_classes=num_classes, image_size=32, **kw))
