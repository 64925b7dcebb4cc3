# PyTorch's examples/fast_neural_style/neural_style/utils.py (github.com/pytorch/examples,
# BSD-3-Clause): gram_matrix (view, transpose, bmm) and normalize_batch (new_tensor, the
# in-place div_(255.0)) unchanged. load_image / save_image read and write image files with
# PIL; here load_image makes a NumPy image of the asked size (no files, no PIL) and
# save_image records what it was given.
import numpy as np
import torch  # noqa: F401  (the original's import)

saved = {}


def load_image(filename, size=None, scale=None):
    rng = np.random.default_rng(abs(hash(filename)) % 2**32 if filename != 'style.jpg' else 0)
    size = size or 16
    return (rng.random((size, size, 3)) * 255).astype(np.uint8)  # what ToTensor().mul(255) reads


def save_image(filename, data):
    saved[filename] = data.clone().clamp(0, 255).numpy()


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    # normalize using imagenet mean and std
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std
