"""torchvision's ``MNIST`` as the old tutorials read it, over either framework: ``data`` a
uint8 ``(N, 28, 28)`` tensor and ``targets`` an int64 tensor, with the pre-0.4 names
``train_data`` / ``test_data`` / ``train_labels`` / ``test_labels`` (torchvision keeps them
as deprecated properties), and ``__getitem__`` as torchvision's (a PIL ``L`` image through
``transform``, the target as a Python int). The images are small and synthetic (seeded
NumPy, a per-class pattern plus noise: a few steps learn something); nothing downloads.
``transforms`` are the shared stand-in's (``_torchvision_standin.py``)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from .._torchvision_standin import torchvision_modules as _base_modules


def torchvision_modules(lib, train: int = 120, test: int = 40) -> dict:
    """``sys.modules`` entries for ``torchvision`` over ``lib`` with this ``MNIST``
    (``train`` / ``test`` samples per split)."""
    modules = _base_modules(lib)

    class MNIST:
        def __init__(self, root, train_split=True, transform=None, target_transform=None, download=False,
                     **kwargs):
            train_split = kwargs.pop("train", train_split)
            if kwargs:
                raise TypeError(f"MNIST stand-in: unexpected arguments {sorted(kwargs)}")
            rng = np.random.default_rng(50 + (0 if train_split else 1))
            n = train if train_split else test
            labels = rng.permutation(np.arange(n) % 10)
            base = rng.random((10, 28, 28))
            images = 255 * (0.6 * base[labels] + 0.4 * rng.random((n, 28, 28)))
            self.data = lib.from_numpy(images.astype(np.uint8))
            self.targets = lib.from_numpy(labels.astype(np.int64))
            self.root, self.train = root, train_split
            self.transform, self.target_transform = transform, target_transform

        # torchvision's deprecated names (the tutorials predate data / targets)
        train_data = test_data = property(lambda self: self.data)
        train_labels = test_labels = property(lambda self: self.targets)

        def __len__(self):
            return len(self.data)

        def __getitem__(self, index):
            img, target = self.data[index], int(self.targets[index])
            img = Image.fromarray(img.numpy(), mode="L")
            if self.transform is not None:
                img = self.transform(img)
            if self.target_transform is not None:
                target = self.target_transform(target)
            return img, target

    MNIST.__module__ = modules["torchvision.datasets"].__name__
    modules["torchvision.datasets"].MNIST = MNIST
    return modules
