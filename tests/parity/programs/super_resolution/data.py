# A stand-in for PyTorch's examples/super_resolution/data.py, which downloads BSDS300 and
# makes (low-resolution, high-resolution) Y-channel pairs with torchvision transforms
# (CenterCrop, Resize to crop // upscale_factor, ToTensor). Here: the same pairs' shapes
# and value range from NumPy images, the low-resolution input by block averaging.
import numpy as np
import torch
from torch.utils.data import TensorDataset

CROP = 24


def _pairs(n, upscale_factor, seed):
    rng = np.random.default_rng(seed)
    crop = CROP - (CROP % upscale_factor)
    target = rng.random((n, 1, crop, crop), dtype=np.float32)
    low = target.reshape(n, 1, crop // upscale_factor, upscale_factor, crop // upscale_factor,
                         upscale_factor).mean(axis=(3, 5)).astype(np.float32)
    return TensorDataset(torch.from_numpy(low), torch.from_numpy(target))


def get_training_set(upscale_factor):
    return _pairs(4, upscale_factor, seed=0)


def get_test_set(upscale_factor):
    return _pairs(4, upscale_factor, seed=1)
