"""Readers for real data on local disk (nothing downloads) and synthetic data.

* ``MNIST`` / ``FashionMNIST``: IDX files (``train-images-idx3-ubyte`` ... plain or ``.gz``)
  found in ``root``, ``root/MNIST/raw``, ``root/FashionMNIST/raw`` or ``root/raw``.
* ``CIFAR10``: the *binary* version (``data_batch_1.bin`` .. ``data_batch_5.bin``,
  ``test_batch.bin``; each record is 1 label byte + 3072 bytes R, G, B planes of 32x32). The
  python version is a set of pickles, which can run arbitrary code when loaded: it is
  refused with an error that says which archive to get instead.
* ``TextCorpus``: byte- or character-level tokens of every file matching ``pattern`` under
  ``root`` (default: the Python standard library's own source folder, top level ``*.py``,
  which every machine has). Files are read in sorted path order and joined with a newline;
  the first ``1 - val_fraction`` of the token stream is the train split, the rest the
  validation split (deterministic). Samples are ``(x, y)`` blocks of ``block_size`` tokens,
  ``y`` shifted by one.
* ``Digits``: scikit-learn's bundled 8x8 digits (needs scikit-learn).
* ``SyntheticDataset`` / ``SyntheticTokens``: deterministic random samples of any shape.

Image samples without a ``transform`` are float32 Tensors in ``[0, 1]`` shaped (C, H, W),
which is what ``torchvision.transforms.ToTensor`` would give; the raw uint8 arrays are in
``.data`` and the labels in ``.targets`` (as in torchvision).
"""

from __future__ import annotations

import glob
import gzip
import os

import numpy as np

from .. import _config
from ..autograd.tensor import _wrap
from .dataset import Dataset

__all__ = [
    "read_idx", "MNIST", "FashionMNIST", "CIFAR10", "TextCorpus", "Digits",
    "SyntheticDataset", "SyntheticTokens", "default_text_root",
]

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str) -> np.ndarray:
    """Read an IDX file (MNIST's format): magic ``0 0 <type> <ndim>``, ndim big-endian
    uint32 sizes, then the data, row-major. ``.gz`` files are decompressed."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise ValueError(f"cannot read IDX file {path}: {e}") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(
            f"{path} is not an IDX file (magic bytes {raw[:4]!r}; expected 00 00 <type> <ndim>)"
        )
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: IDX header truncated ({len(raw)} bytes)")
    shape = tuple(int(x) for x in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dt = np.dtype(_IDX_TYPES[raw[2]])
    need = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if len(raw) - header != need:
        raise ValueError(
            f"{path}: IDX header says shape {shape} ({need} bytes of data) but the file has "
            f"{len(raw) - header}; the file is truncated or corrupt, get it again"
        )
    return np.frombuffer(raw, dtype=dt, offset=header).reshape(shape).astype(dt.newbyteorder("="))


def _resolve_root(root, what: str) -> str:
    if root is None:
        root = _config.data_root()
    if root is None:
        raise ValueError(
            f"{what}: no data folder given; pass root=DIR (or --data DIR) or set SHARDFLOW_DATA"
        )
    root = os.path.expanduser(str(root))
    if not os.path.isdir(root):
        raise FileNotFoundError(
            f"{what}: data folder {root!r} does not exist; pass the folder that holds the files"
        )
    return root


def _no_download(download, what):
    if download:
        raise RuntimeError(
            f"{what}: shardflow never downloads data; put the files in the folder yourself and "
            "call with download=False"
        )


class _ImageDataset(Dataset):
    def __init__(self, data: np.ndarray, targets: np.ndarray, transform, target_transform):
        self.data, self.targets = data, targets
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.data)

    def _image(self, raw):  # (H, W) or (H, W, C) uint8 -> (C, H, W) float32 in [0, 1]
        a = raw.astype(np.float32) / 255.0
        return a[None] if a.ndim == 2 else np.ascontiguousarray(a.transpose(2, 0, 1))

    def __getitem__(self, index):
        img, target = self._image(self.data[index]), int(self.targets[index])
        img = _wrap(img) if self.transform is None else self.transform(_wrap(img))
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __getitems__(self, indices):
        if self.transform is not None or self.target_transform is not None:
            return [self[i] for i in indices]
        idx = np.asarray(indices, dtype=np.int64)
        imgs = self.data[idx].astype(np.float32) / 255.0  # one vectorised conversion
        imgs = imgs[:, None] if imgs.ndim == 3 else imgs.transpose(0, 3, 1, 2)
        return [(imgs[i], int(t)) for i, t in enumerate(self.targets[idx])]


class MNIST(_ImageDataset):
    """MNIST from IDX files; ``train`` picks ``train-*`` or ``t10k-*``."""

    folder = "MNIST"
    classes = [f"{i} - {w}" for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])]

    def __init__(self, root=None, train: bool = True, transform=None, target_transform=None,
                 download: bool = False):
        name = type(self).__name__
        _no_download(download, name)
        root = _resolve_root(root, name)
        prefix = "train" if train else "t10k"
        images = self._find(root, f"{prefix}-images-idx3-ubyte")
        labels = self._find(root, f"{prefix}-labels-idx1-ubyte")
        data, targets = read_idx(images), read_idx(labels).astype(np.int64)
        if data.ndim != 3 or len(data) != len(targets):
            raise ValueError(
                f"{name}: {images} has shape {data.shape} and {labels} has {targets.shape}; "
                "expected (N, H, W) images and N labels"
            )
        super().__init__(data, targets, transform, target_transform)
        self.root, self.train = root, train

    def _find(self, root, stem) -> str:
        dirs = [root, os.path.join(root, self.folder, "raw"), os.path.join(root, self.folder),
                os.path.join(root, "raw")]
        names = [stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"]
        for d in dirs:
            for n in names:
                p = os.path.join(d, n)
                if os.path.isfile(p):
                    return p
        raise FileNotFoundError(
            f"{type(self).__name__}: no file {stem}[.gz] in {root!r} (also looked in "
            f"{self.folder}/raw and raw/); put the IDX files there"
        )


class FashionMNIST(MNIST):
    folder = "FashionMNIST"
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]


class CIFAR10(_ImageDataset):
    """CIFAR-10, binary version (see the module docstring)."""

    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    _RECORD = 1 + 3 * 32 * 32

    def __init__(self, root=None, train: bool = True, transform=None, target_transform=None,
                 download: bool = False):
        _no_download(download, "CIFAR10")
        root = _resolve_root(root, "CIFAR10")
        names = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
        folder = None
        for d in (root, os.path.join(root, "cifar-10-batches-bin")):
            if all(os.path.isfile(os.path.join(d, n)) for n in names):
                folder = d
                break
        if folder is None:
            for d in (root, os.path.join(root, "cifar-10-batches-py")):
                if os.path.isfile(os.path.join(d, "data_batch_1")) or os.path.isfile(
                        os.path.join(d, "test_batch")):
                    raise ValueError(
                        f"CIFAR10: {d!r} holds the python version of CIFAR-10, which is pickle "
                        "files; shardflow never loads pickles (they can run arbitrary code). Get "
                        "the binary version (cifar-10-binary.tar.gz, files data_batch_1.bin ... "
                        "test_batch.bin) and point root at it"
                    )
            raise FileNotFoundError(
                f"CIFAR10: expected {', '.join(names)} in {root!r} or its cifar-10-batches-bin/ "
                "folder (the binary version of CIFAR-10)"
            )
        datas, targets = [], []
        for n in names:
            path = os.path.join(folder, n)
            raw = np.fromfile(path, dtype=np.uint8)
            if raw.size % self._RECORD:
                raise ValueError(
                    f"CIFAR10: {path} has {raw.size} bytes, not a multiple of the {self._RECORD}-byte "
                    "record; the file is truncated or corrupt"
                )
            rec = raw.reshape(-1, self._RECORD)
            targets.append(rec[:, 0].astype(np.int64))
            datas.append(rec[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))  # (N, H, W, C)
        super().__init__(np.ascontiguousarray(np.concatenate(datas)), np.concatenate(targets),
                         transform, target_transform)
        self.root, self.train = root, train


def default_text_root() -> str:
    """The Python standard library's source folder (real text on every machine)."""
    return os.path.dirname(os.__file__)


class TextCorpus(Dataset):
    """Byte- or character-level language-modelling blocks from a folder of text files.

    ``level="char"``: the vocabulary is the sorted set of characters of the whole corpus
    (both splits), so train and val share it; ``stoi`` / ``itos`` map both ways.
    ``level="byte"``: tokens are the UTF-8 bytes, vocabulary 256.
    ``corpus.encode(str) -> np.ndarray`` / ``corpus.decode(ids) -> str``.
    ``split(name)`` returns another view of the same corpus for ``"train"`` or ``"val"``.
    """

    def __init__(self, root=None, block_size: int = 128, split: str = "train",
                 pattern: str = "*.py", level: str = "char", val_fraction: float = 0.1,
                 recursive: bool = False, max_bytes: int | None = None):
        if level not in ("char", "byte"):
            raise ValueError(f"level must be 'char' or 'byte', got {level!r}")
        if split not in ("train", "val"):
            raise ValueError(f"split must be 'train' or 'val', got {split!r}")
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        root = default_text_root() if root is None else os.path.expanduser(str(root))
        if not os.path.isdir(root):
            raise FileNotFoundError(f"TextCorpus: folder {root!r} does not exist")
        pat = os.path.join(root, "**", pattern) if recursive else os.path.join(root, pattern)
        files = sorted(f for f in glob.glob(pat, recursive=recursive) if os.path.isfile(f))
        if not files:
            raise FileNotFoundError(
                f"TextCorpus: no files match {pattern!r} in {root!r}; pass pattern='*.txt' or "
                "another folder"
            )
        parts, total = [], 0
        for f in files:
            with open(f, "rb") as fh:
                b = fh.read()
            parts.append(b)
            total += len(b) + 1
            if max_bytes is not None and total >= max_bytes:
                break
        raw = b"\n".join(parts)
        if max_bytes is not None:
            raw = raw[:max_bytes]
        self.root, self.files, self.level = root, files, level
        if level == "byte":
            tokens = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
            self.itos = None
            self.vocab_size = 256
        else:
            text = raw.decode("utf-8", errors="replace")
            chars = sorted(set(text))
            self.itos = chars
            self.stoi = {c: i for i, c in enumerate(chars)}
            codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            lut_keys = np.array([ord(c) for c in chars], dtype=np.uint32)
            tokens = np.searchsorted(lut_keys, codes).astype(np.int64)  # chars are sorted
            self.vocab_size = len(chars)
        n_train = int(len(tokens) * (1 - val_fraction))
        self._tokens = {"train": tokens[:n_train], "val": tokens[n_train:]}
        self.block_size, self.split_name = block_size, split
        self.data = self._tokens[split]
        if len(self.data) <= block_size:
            raise ValueError(
                f"TextCorpus: the {split} split has {len(self.data)} tokens, not more than "
                f"block_size={block_size}; use a smaller block_size or more text"
            )

    def split(self, name: str) -> TextCorpus:
        other = object.__new__(TextCorpus)
        other.__dict__.update(self.__dict__)
        other.split_name, other.data = name, self._tokens[name]
        return other

    def encode(self, text: str) -> np.ndarray:
        if self.level == "byte":
            return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)
        return np.array([self.stoi[c] for c in text], dtype=np.int64)

    def decode(self, ids) -> str:
        ids = np.asarray(ids).reshape(-1).tolist()
        if self.level == "byte":
            return bytes(int(i) for i in ids).decode("utf-8", errors="replace")
        return "".join(self.itos[int(i)] for i in ids)

    def unigram_entropy(self) -> float:
        """Cross-entropy (nats/token) of the val split under the train split's unigram
        frequencies (add-one smoothed): the loss a model that ignores context would reach."""
        counts = np.bincount(self._tokens["train"], minlength=self.vocab_size) + 1.0
        p = counts / counts.sum()
        return float(-np.log(p[self._tokens["val"]]).mean())

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, i):
        chunk = self.data[i: i + self.block_size + 1]
        return chunk[:-1], chunk[1:]

    def __getitems__(self, indices):
        idx = np.asarray(indices, dtype=np.int64)[:, None] + np.arange(self.block_size + 1)
        chunks = self.data[idx]  # (B, T+1), one gather
        return [(c[:-1], c[1:]) for c in chunks]


class Digits(_ImageDataset):
    """scikit-learn's 8x8 digits (1797 images, 16 grey levels), split deterministically."""

    def __init__(self, train: bool = True, val_fraction: float = 0.2, seed: int = 0,
                 transform=None, target_transform=None):
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            raise ImportError(
                "Digits needs scikit-learn; install it with `pip install scikit-learn`"
            ) from None
        d = load_digits()
        images = (d.images * (255.0 / 16.0)).round().astype(np.uint8)  # (N, 8, 8)
        perm = np.random.default_rng(seed).permutation(len(images))
        n_val = int(len(images) * val_fraction)
        sel = perm[n_val:] if train else perm[:n_val]
        super().__init__(images[sel], d.target[sel].astype(np.int64), transform, target_transform)
        self.train = train


class SyntheticDataset(Dataset):
    """``num_samples`` random samples: ``(x, y)`` with ``x`` of ``input_shape`` (standard
    normal, ``dtype``) and ``y`` an int class in ``[0, num_classes)`` (or, with
    ``target_shape``, a normal array). Sample ``i`` is a pure function of ``(seed, i)``."""

    def __init__(self, num_samples: int, input_shape, num_classes: int | None = 10,
                 target_shape=None, dtype=np.float32, seed: int = 0):
        if num_samples <= 0:
            raise ValueError(f"num_samples must be positive, got {num_samples}")
        self.num_samples, self.input_shape = int(num_samples), tuple(input_shape)
        self.num_classes, self.target_shape = num_classes, None if target_shape is None else tuple(target_shape)
        self.dtype, self.seed = np.dtype(dtype), int(seed)

    def __len__(self):
        return self.num_samples

    def __getitem__(self, i):
        if not -self.num_samples <= i < self.num_samples:
            raise IndexError(f"index {i} out of range for {self.num_samples} samples")
        i %= self.num_samples
        rng = np.random.default_rng([self.seed, i])
        x = rng.standard_normal(self.input_shape, dtype=np.float32).astype(self.dtype)
        if self.target_shape is not None:
            y = rng.standard_normal(self.target_shape, dtype=np.float32).astype(self.dtype)
        else:
            y = int(rng.integers(0, self.num_classes))
        return x, y


class SyntheticTokens(Dataset):
    """Random token sequences ``(x, y)`` of length ``seq_len`` over ``vocab_size`` for LM
    benchmarks; ``y`` is ``x`` shifted by one. Deterministic in ``(seed, i)``."""

    def __init__(self, num_samples: int, seq_len: int, vocab_size: int, seed: int = 0):
        self.num_samples, self.seq_len, self.vocab_size, self.seed = num_samples, seq_len, vocab_size, seed

    def __len__(self):
        return self.num_samples

    def __getitem__(self, i):
        if not 0 <= i < self.num_samples:
            raise IndexError(f"index {i} out of range for {self.num_samples} samples")
        seq = np.random.default_rng([self.seed, i]).integers(0, self.vocab_size, self.seq_len + 1)
        return seq[:-1], seq[1:]
