"""A stand-in for the few parts of torchvision that yunjey/pytorch-tutorial uses (torchvision
is not installed here, and its data sets download). Written for this project, not copied.

Loaded twice by the test (as written, and with ``import torch`` rewritten to shardflow), so
that each run gets its own framework's tensors; :func:`modules` gives the ``sys.modules``
entries that make the programs' own ``import torchvision`` lines find it.

* ``datasets.MNIST`` / ``datasets.CIFAR10``: same constructor and item interface (an image
  the transform turns into a tensor, and an ``int`` label), made from a seeded NumPy
  generator: ``SIZES`` images, each a label-dependent pattern plus noise, so training has
  something to learn. The images are NumPy ``uint8`` arrays where torchvision gives PIL images.
* ``transforms``: ``Compose``, ``ToTensor``, ``Normalize`` (torchvision's arithmetic:
  ``(x - mean) / std`` per channel), ``Pad``, and ``RandomHorizontalFlip`` / ``RandomCrop``
  drawing from a NumPy generator seeded alike in both runs (torchvision draws from torch's).
* ``utils.save_image`` keeps a copy of the tensor in ``SAVED`` under the path (no PNG).
* ``models.vgg19(pretrained=True)`` / ``models.resnet18`` / ``resnet152``: small networks
  with the same attribute names and layer indexing (VGG-19's ``features`` with its 37
  layers, convs at 0, 2, 5, 7, 10, ... and pools at 4, 9, 18, 27, 36; ResNet's ``fc`` with
  ``in_features``, last of its ``children()``), channels cut to a few, "pretrained" weights drawn from a seeded NumPy
  generator (the same in both runs).
"""

import types

import numpy as np
import torch
import torch.nn as nn

SIZES = {"train": 60, "test": 20}  # images per split; the test sets these before a run
SAVED = {}  # save_image's path -> tensor
_RNG = [np.random.default_rng(123)]  # the random transforms' draws


def reset(train=60, test=20, seed=123):
    """Sizes for the next run, a fresh draw stream and no saved images."""
    SIZES.update(train=train, test=test)
    SAVED.clear()
    _RNG[0] = np.random.default_rng(seed)


class _Synthetic:
    """Label-dependent images: class ``k`` brightens band ``k`` (rows, for MNIST; columns of
    one channel, for CIFAR) over uniform noise."""

    shape = (28, 28)

    def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False):
        n = SIZES["train" if train else "test"]
        rng = np.random.default_rng(0 if train else 1)
        self.targets = rng.integers(0, 10, n).tolist()
        noise = rng.integers(0, 120, (n, *self.shape))
        band = self.shape[0] // 10
        for i, k in enumerate(self.targets):
            if len(self.shape) == 2:
                noise[i, k * band:(k + 1) * band, :] += 130
            else:
                noise[i, :, k * band:(k + 1) * band, k % 3] += 130
        self.data = noise.astype(np.uint8)
        self.transform, self.target_transform, self.train = transform, target_transform, train

    def __getitem__(self, index):
        img, target = self.data[index], self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)


class MNIST(_Synthetic):
    shape = (28, 28)


class CIFAR10(_Synthetic):
    shape = (32, 32, 3)


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class ToTensor:
    """HxW or HxWxC uint8 -> CxHxW float in [0, 1], as torchvision's."""

    def __call__(self, pic):
        a = np.asarray(pic)
        if a.ndim == 2:
            a = a[:, :, None]
        return torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1))).float().div(255)


class Normalize:
    def __init__(self, mean, std, inplace=False):
        self.mean, self.std = list(mean), list(std)

    def __call__(self, tensor):
        mean = torch.tensor(self.mean, dtype=tensor.dtype).view(-1, 1, 1)
        std = torch.tensor(self.std, dtype=tensor.dtype).view(-1, 1, 1)
        return tensor.sub(mean).div(std)


class Pad:
    """Zero padding of an HxWxC uint8 image (before ToTensor, as the program uses it)."""

    def __init__(self, padding):
        self.padding = padding

    def __call__(self, img):
        p = self.padding
        return np.pad(img, ((p, p), (p, p)) + ((0, 0),) * (img.ndim - 2))


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        img = np.asarray(img)  # a PIL image too
        return img[:, ::-1] if _RNG[0].random() < self.p else img


class RandomCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, img):
        img = np.asarray(img)  # a PIL image too
        h, w = img.shape[:2]
        i, j = _RNG[0].integers(0, h - self.size + 1), _RNG[0].integers(0, w - self.size + 1)
        return img[i:i + self.size, j:j + self.size]


def save_image(tensor, fp, **kwargs):
    SAVED[str(fp)] = tensor.detach().clone()


def _fixed_weights(model, seed):
    """'Pretrained' weights: the same NumPy draws in both runs."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else 1
            p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * np.sqrt(2.0 / fan_in)).astype(np.float32)))
    return model


class VGG(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.features = features


def vgg19(pretrained=False, **kwargs):
    """VGG-19's ``features`` layer for layer (conv 3x3 + ReLU(inplace), max pools), 4 to 8
    channels instead of 64 to 512."""
    layers, in_channels = [], 3
    for v in [4, 4, "M", 6, 6, "M", 8, 8, 8, 8, "M", 8, 8, 8, 8, "M", 8, 8, 8, 8, "M"]:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
            in_channels = v
    return _fixed_weights(VGG(nn.Sequential(*layers)), 19)


class ResNet(nn.Module):
    """Conv, BatchNorm, ReLU, global average pool and ``fc``: the attributes the program uses."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.avgpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(x, 1))


def resnet18(pretrained=False, **kwargs):
    return _fixed_weights(ResNet(), 18)


def resnet152(pretrained=False, **kwargs):
    return _fixed_weights(ResNet(), 152)


def modules(prefix):
    """``{name: module}`` for ``sys.modules``: ``torchvision`` and its submodules, each a
    namespace over this file's objects (named ``prefix...``, not ``torchvision...``, so the
    rewritten program's own check that nothing comes from torchvision still holds)."""
    def namespace(name, **attrs):
        m = types.ModuleType(f"{prefix}.{name}")
        m.__dict__.update(attrs)
        return m

    datasets = namespace("datasets", MNIST=MNIST, CIFAR10=CIFAR10)
    transforms = namespace("transforms", Compose=Compose, ToTensor=ToTensor, Normalize=Normalize, Pad=Pad,
                           RandomHorizontalFlip=RandomHorizontalFlip, RandomCrop=RandomCrop)
    utils = namespace("utils", save_image=save_image)
    models = namespace("models", vgg19=vgg19, resnet18=resnet18, resnet152=resnet152)
    top = namespace("torchvision", datasets=datasets, transforms=transforms, utils=utils, models=models)
    return {"torchvision": top, "torchvision.datasets": datasets, "torchvision.transforms": transforms,
            "torchvision.utils": utils, "torchvision.models": models}
