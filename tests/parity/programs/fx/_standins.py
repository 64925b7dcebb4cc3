"""Stand-ins for what the FX tutorials import beyond torch: ``torchvision.models.resnet18``
and the ``tabulate`` package (neither is installed; torchvision's weights download).

* ``resnet18()``: torchvision's ResNet-18 module layout (``conv1``/``bn1``/``relu``/``maxpool``,
  ``layer1``..``layer4`` of two BasicBlocks with ``downsample`` where the shape changes,
  ``avgpool``, ``torch.flatten(x, 1)``, ``fc``; the forward through ``_forward_impl``, and
  ``out += identity`` as torchvision writes it) at 1/16 of the widths (4, 8, 16, 32
  channels), made for either framework. Its weights and batch-norm statistics are drawn from
  one seeded NumPy generator, so both frameworks' models are the same (torchvision's are
  random). ``ResNet``'s arguments have defaults so that ``type(model)()`` (the conv-bn
  fuser's ``fuse``) builds one, as the tutorial expects.
* ``tabulate(rows, headers)``: tabulate's default layout (columns as wide as their widest
  cell or header + 2, two spaces apart, a dashed rule, numbers right-aligned).
"""

from __future__ import annotations

import types

import numpy as np


def resnet_modules(lib) -> dict:
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
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return out

    class ResNet(nn.Module):
        def __init__(self, block=BasicBlock, layers=(2, 2, 2, 2), num_classes=10, width=4):
            super().__init__()
            self.inplanes = width
            self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, width, layers[0])
            self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
            self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
            self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(width * 8, num_classes)
            rng = np.random.default_rng(0)
            state = {}
            for k, v in self.state_dict().items():
                shape = tuple(v.shape)
                if k.endswith("num_batches_tracked"):
                    state[k] = lib.tensor(0)
                elif k.endswith("running_var"):
                    state[k] = lib.tensor(rng.uniform(0.5, 1.5, shape).astype(np.float32))
                else:
                    state[k] = lib.tensor((rng.standard_normal(shape) * 0.2).astype(np.float32))
            self.load_state_dict(state)

        def _make_layer(self, block, planes, blocks, stride=1):
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                           nn.BatchNorm2d(planes))
            layers = [block(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes
            layers.extend(block(self.inplanes, planes) for _ in range(1, blocks))
            return nn.Sequential(*layers)

        def _forward_impl(self, x):
            x = self.conv1(x)
            x = self.bn1(x)
            x = self.relu(x)
            x = self.maxpool(x)
            x = self.layer1(x)
            x = self.layer2(x)
            x = self.layer3(x)
            x = self.layer4(x)
            x = self.avgpool(x)
            x = lib.flatten(x, 1)
            x = self.fc(x)
            return x

        def forward(self, x):
            return self._forward_impl(x)

    def resnet18(*, weights=None, progress=True, **kwargs):
        if weights is not None:
            raise NotImplementedError("the resnet18 stand-in has no pretrained weights")
        return ResNet(**kwargs)

    models = types.ModuleType("tv_standin.models")  # not torchvision's name: refuse_torch_names
    models.resnet18 = resnet18
    models.ResNet = ResNet
    tv = types.ModuleType("tv_standin")
    tv.models = models
    return {"torchvision": tv, "torchvision.models": models}


def tabulate_module() -> dict:
    def tabulate(rows, headers=()):
        rows = [list(r) for r in rows]
        numeric = [bool(rows) and all(isinstance(r[i], int | float) for r in rows) for i in range(len(headers))]
        cells = [[f"{c:g}" if isinstance(c, float) else str(c) for c in r] for r in rows]
        widths = [max([len(h) + 2, *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

        def line(row):
            return "  ".join(c.rjust(w) if n else c.ljust(w)
                             for c, w, n in zip(row, widths, numeric, strict=True)).rstrip()

        return "\n".join([line(list(headers)), "  ".join("-" * w for w in widths), *map(line, cells)])

    mod = types.ModuleType("tabulate")
    mod.tabulate = tabulate
    return {"tabulate": mod}
