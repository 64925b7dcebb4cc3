"""A stand-in for the few ``torchvision`` names the beginner tutorials use, made for either
framework: torchvision is not installed (and its data sets download). The tutorials keep
their ``from torchvision import datasets`` lines; the parity test passes
``torchvision_modules(lib)`` as ``run_script(..., modules=...)``, so the import finds these.

* ``datasets.FashionMNIST`` / ``datasets.MNIST`` / ``datasets.CIFAR10``: small synthetic sets
  (seeded NumPy, the train and test splits differ) of PIL images as torchvision gives them
  (28x28 ``L``, 32x32 ``RGB``) with integer targets; ``transform`` / ``target_transform``
  applied in ``__getitem__``, as torchvision's.
* ``transforms.ToTensor`` (PIL or HxWxC uint8 -> CxHxW float32 / 255), ``Normalize``,
  ``Compose``, ``Lambda``.
* ``utils.make_grid`` (the tiles, 2 pixels apart, as torchvision lays them out) for the
  tutorials' ``imshow``; ``io.read_image`` (an image file as a uint8 CxHxW tensor);
  ``models.vgg16`` (torchvision's VGG module layout at 1/32 of the widths, seeded stand-in
  weights for ``weights="IMAGENET1K_V1"``).
"""

from __future__ import annotations

import types

import numpy as np
from PIL import Image

SIZES = {"train": 192, "test": 100}


def torchvision_modules(lib, sizes=None) -> dict:
    """``{"torchvision": ..., "torchvision.datasets": ..., ...}`` over ``lib`` (torch or
    shardflow); ``sizes`` overrides the number of samples per split."""
    sizes = {**SIZES, **(sizes or {})}

    class _Synthetic:
        shape, mode, classes, seed = None, None, None, 0

        def __init__(self, root, train=True, download=False, transform=None, target_transform=None):
            rng = np.random.default_rng(self.seed + (0 if train else 1))
            n = sizes["train" if train else "test"]
            # every class present (the tutorials divide by each class's count)
            self.targets = rng.permutation(np.arange(n) % len(self.classes)).tolist()
            # images that depend on the label, so that a few steps learn something
            base = rng.random((len(self.classes),) + self.shape)
            noise = rng.random((n,) + self.shape)
            self.data = (255 * (0.5 * base[self.targets] + 0.5 * noise)).astype(np.uint8)
            self.root, self.train = root, train
            self.transform, self.target_transform = transform, target_transform

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            img, target = Image.fromarray(self.data[index], mode=self.mode), self.targets[index]
            if self.transform is not None:
                img = self.transform(img)
            if self.target_transform is not None:
                target = self.target_transform(target)
            return img, target

    class FashionMNIST(_Synthetic):
        shape, mode, seed = (28, 28), "L", 10
        classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                   "Sneaker", "Bag", "Ankle boot"]

    class MNIST(FashionMNIST):
        seed = 20
        classes = [f"{i} - {w}" for i, w in enumerate(
            "zero one two three four five six seven eight nine".split())]

    class CIFAR10(_Synthetic):
        shape, mode, seed = (32, 32, 3), "RGB", 30
        classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck"]

    class ToTensor:
        def __call__(self, pic):
            array = np.asarray(pic)
            if array.ndim == 2:
                array = array[:, :, None]
            t = lib.from_numpy(np.array(array.transpose(2, 0, 1), order="C"))
            return t.to(dtype=lib.float32).div(255)

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean, std

        def __call__(self, t):
            mean = lib.as_tensor(self.mean, dtype=t.dtype).view(-1, 1, 1)
            std = lib.as_tensor(self.std, dtype=t.dtype).view(-1, 1, 1)
            return t.sub(mean).div(std)

    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, x):
            for t in self.transforms:
                x = t(x)
            return x

    class Lambda:
        def __init__(self, lambd):
            self.lambd = lambd

        def __call__(self, x):
            return self.lambd(x)

    def make_grid(tensor, nrow=8, padding=2, pad_value=0.0):
        n, c, h, w = tensor.shape
        xmaps = min(nrow, n)
        ymaps = (n + xmaps - 1) // xmaps
        grid = lib.full((c, h * ymaps + padding * (ymaps + 1), w * xmaps + padding * (xmaps + 1)), pad_value)
        for k in range(n):
            y, x = divmod(k, xmaps)
            top, left = y * (h + padding) + padding, x * (w + padding) + padding
            grid[:, top:top + h, left:left + w] = tensor[k]
        return grid

    def read_image(path, mode=None):
        """``torchvision.io.read_image``: a uint8 CxHxW tensor of the image file."""
        array = np.asarray(Image.open(path))
        if array.ndim == 2:
            array = array[:, :, None]
        return lib.from_numpy(np.array(array.transpose(2, 0, 1), order="C"))

    nn = lib.nn

    class VGG(nn.Module):
        """torchvision's VGG layout (``features``, ``avgpool``, ``classifier``, the same
        module names and order), at 1/32 of the widths: VGG-16's 138M parameters have no
        place in a unit test."""

        def __init__(self, features, num_classes=1000, dropout=0.5):
            super().__init__()
            self.features = features
            self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
            width = 512 // 32
            self.classifier = nn.Sequential(
                nn.Linear(width * 7 * 7, 4096 // 32), nn.ReLU(True), nn.Dropout(p=dropout),
                nn.Linear(4096 // 32, 4096 // 32), nn.ReLU(True), nn.Dropout(p=dropout),
                nn.Linear(4096 // 32, num_classes),
            )

        def forward(self, x):
            x = self.features(x)
            x = self.avgpool(x)
            x = lib.flatten(x, 1)
            return self.classifier(x)

    def vgg16(*, weights=None, progress=True, **kwargs):
        """VGG-16's configuration "D" (widths / 32); ``weights="IMAGENET1K_V1"`` gives seeded
        stand-in "pretrained" values (the same in both frameworks)."""
        layers, channels = [], 3
        for v in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers += [nn.Conv2d(channels, v // 32, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                channels = v // 32
        model = VGG(nn.Sequential(*layers), **kwargs)
        if weights is not None:
            if weights != "IMAGENET1K_V1":
                raise ValueError(f"the stand-in has IMAGENET1K_V1 weights only, got {weights!r}")
            rng = np.random.default_rng(40)
            model.load_state_dict({k: lib.from_numpy((0.1 * rng.standard_normal(tuple(v.shape))).astype(np.float32))
                                   for k, v in model.state_dict().items()})
        return model

    def module(name, **names):
        m = types.ModuleType(name)
        m.__dict__.update(names)
        return m

    datasets = module("tv_standin.datasets", FashionMNIST=FashionMNIST, MNIST=MNIST, CIFAR10=CIFAR10)
    transforms = module("tv_standin.transforms", ToTensor=ToTensor, Normalize=Normalize,
                        Compose=Compose, Lambda=Lambda)
    utils = module("tv_standin.utils", make_grid=make_grid)
    io = module("tv_standin.io", read_image=read_image)
    models = module("tv_standin.models", VGG=VGG, vgg16=vgg16)
    VGG.__module__, VGG.__qualname__ = models.__name__, "VGG"
    package = module("tv_standin", datasets=datasets, transforms=transforms, utils=utils, io=io, models=models)
    package.__path__ = []
    for cls in (FashionMNIST, MNIST, CIFAR10):
        cls.__module__ = datasets.__name__
    for cls in (ToTensor, Normalize, Compose, Lambda):
        cls.__module__ = transforms.__name__
    return {"torchvision": package, "torchvision.datasets": datasets, "torchvision.transforms": transforms,
            "torchvision.utils": utils, "torchvision.io": io, "torchvision.models": models,
            "tv_standin": package, "tv_standin.models": models}  # where pickle finds VGG (a whole-model save)
