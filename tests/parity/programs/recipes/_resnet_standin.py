"""``torchvision.models.resnet18`` for the profiler recipe, made for either framework
(torchvision is not installed): torchvision's ResNet-18 module layout (BasicBlock,
``conv1``/``bn1``/``relu``/``maxpool``, ``layer1``..``layer4`` with downsample branches,
``avgpool``/``fc``; in-place ReLUs, ``out += identity``) at 1/8 of the widths (8, 16, 32,
64 channels), so the op calls per forward are torchvision's (20 conv2d, 20 batch_norm, 17
ReLUs, 8 residual adds, one max_pool2d, adaptive_avg_pool2d, flatten and linear)."""

from __future__ import annotations

import types


def torchvision_modules(lib) -> dict:
    nn = lib.nn

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            return self.relu(out)

    class ResNet(nn.Module):
        def __init__(self, layers=(2, 2, 2, 2), num_classes=1000, width=8):
            super().__init__()
            self.inplanes = width
            self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(width, layers[0])
            self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
            self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
            self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(width * 8, num_classes)

        def _make_layer(self, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                           nn.BatchNorm2d(planes))
            layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes
            layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            x = lib.flatten(self.avgpool(x), 1)
            return self.fc(x)

    def resnet18(*, weights=None, progress=True, **kwargs):
        if weights is not None:
            raise NotImplementedError("the resnet18 stand-in has no pretrained weights")
        return ResNet(**kwargs)

    # (named apart from torchvision: the rewritten program's refusal of torch names looks
    # at module names)
    models = types.ModuleType("resnet_standin.models")
    models.resnet18, models.ResNet, models.BasicBlock = resnet18, ResNet, BasicBlock
    package = types.ModuleType("resnet_standin")
    package.models = models
    return {"torchvision": package, "torchvision.models": models}
