"""The ``torchvision`` names that eriklindernoren/PyTorch-GAN's implementations
(``pytorch_gan/``) and aladdinpersson/Machine-Learning-Collection's scripts
(``ml_collection/``) use, over either library (torchvision is not installed and its data
sets download). Written for this project, not copied.

Built on the shared stand-in (``_torchvision_standin.py``: synthetic ``datasets.MNIST`` /
``CIFAR10``, ``transforms.ToTensor`` / ``Normalize`` / ``Compose``, ``models.vgg16``) with
what these scripts add:

* ``transforms.Resize(size)``: PIL's bilinear resize of the shorter side to ``size`` (what
  torchvision does to a PIL image); the identity when the image already has that size.
* ``utils.save_image(tensor, fp, **kwargs)``: keeps a copy of the tensor in ``SAVED`` under
  ``fp`` (no PNG is written; the test compares the tensors).
* ``models.vgg16(pretrained=False)``: torchvision's legacy keyword, mapped to ``weights=``
  with torchvision's deprecation warning (UserWarning), as torchvision >= 0.13 does.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
from PIL import Image

from ._torchvision_standin import torchvision_modules as _shared

SAVED: dict = {}  # save_image's path -> NumPy array, of the last run


def torchvision_modules(lib, sizes=None) -> dict:
    """``sys.modules`` entries for ``torchvision`` over ``lib`` (torch or shardflow)."""
    modules = _shared(lib, sizes)
    SAVED.clear()

    class Resize:
        def __init__(self, size):
            self.size = size

        def __call__(self, img):
            w, h = img.size
            if isinstance(self.size, int):
                if min(w, h) == self.size:
                    return img
                short = self.size
                new = (short, int(short * h / w)) if w <= h else (int(short * w / h), short)
            else:
                new = (self.size[1], self.size[0])
            return img.resize(new, Image.BILINEAR)

    def save_image(tensor, fp, **kwargs):
        SAVED[fp] = np.array(tensor.detach().cpu().numpy(), copy=True)

    shared_vgg16 = modules["torchvision.models"].vgg16

    def vgg16(*args, pretrained=None, **kwargs):
        if pretrained is not None:
            warnings.warn("The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future, "
                          "please use 'weights' instead.", UserWarning, stacklevel=2)
            kwargs.setdefault("weights", "IMAGENET1K_V1" if pretrained else None)
        return shared_vgg16(*args, **kwargs)

    models = types.ModuleType("tv_standin.models")
    models.__dict__.update(modules["torchvision.models"].__dict__)
    models.vgg16 = vgg16
    transforms = types.ModuleType("tv_standin.transforms")
    transforms.__dict__.update(modules["torchvision.transforms"].__dict__)
    transforms.Resize = Resize
    utils = types.ModuleType("tv_standin.utils")
    utils.__dict__.update(modules["torchvision.utils"].__dict__)
    utils.save_image = save_image
    package = types.ModuleType("tv_standin")
    package.__dict__.update(modules["torchvision"].__dict__)
    package.transforms, package.utils, package.models = transforms, utils, models
    modules.update({"torchvision": package, "torchvision.transforms": transforms, "torchvision.utils": utils,
                    "torchvision.models": models, "tv_standin": package, "tv_standin.models": models})
    return modules
