"""The distributed DCGAN test's ``torchvision`` over either library (torchvision is not
installed and its data sets download): ``datasets.FakeData`` as torchvision draws it (each
image under ``manual_seed(index + random_offset)`` inside a saved and restored generator
state: ``randn(*image_size)``, ``randint(0, num_classes, (1,))``, then ``ToPILImage``'s
``mul(255).byte()`` and the transform), 32 images by default instead of torchvision's 1000
(test time); ``transforms.ToTensor``; ``utils.save_image`` keeping the tensor it would write
as ``<path>.npy`` (the image file's pixels are not compared)."""

from __future__ import annotations

import types

import numpy as np
from PIL import Image


def torchvision_modules(lib) -> dict:
    class ToTensor:
        def __call__(self, pic):
            a = np.asarray(pic)
            return lib.from_numpy(np.array(a.transpose(2, 0, 1), order="C")).to(dtype=lib.float32).div(255)

    class FakeData:
        def __init__(self, size=32, image_size=(3, 224, 224), num_classes=10, transform=None,
                     target_transform=None, random_offset=0):
            self.size, self.image_size, self.num_classes = size, image_size, num_classes
            self.transform, self.target_transform, self.random_offset = transform, target_transform, random_offset

        def __getitem__(self, index):
            rng_state = lib.get_rng_state()
            lib.manual_seed(index + self.random_offset)
            img = lib.randn(*self.image_size)
            target = lib.randint(0, self.num_classes, size=(1,), dtype=lib.long)[0]
            lib.set_rng_state(rng_state)
            img = Image.fromarray(img.mul(255).byte().numpy().transpose(1, 2, 0), mode="RGB")
            if self.transform is not None:
                img = self.transform(img)
            return img, target.item()

        def __len__(self):
            return self.size

    def save_image(tensor, fp, **kwargs):
        np.save(f"{fp}.npy", tensor.detach().cpu().numpy())

    package = types.ModuleType("torchvision")
    package.datasets = types.ModuleType("torchvision.datasets")
    package.datasets.FakeData = FakeData
    package.transforms = types.ModuleType("torchvision.transforms")
    package.transforms.ToTensor = ToTensor
    package.utils = types.ModuleType("torchvision.utils")
    package.utils.save_image = save_image
    return {"torchvision": package, "torchvision.datasets": package.datasets,
            "torchvision.transforms": package.transforms, "torchvision.utils": package.utils}
