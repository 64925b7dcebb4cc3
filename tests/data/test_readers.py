"""Readers for local files: tests write their own tiny IDX / CIFAR / text files."""

import gzip
import os
import pickle
import struct

import numpy as np
import pytest

import shardflow as sf
from shardflow.utils import data as sfd


def _write_idx(path, arr):
    code = {np.uint8: 0x08, np.int32: 0x0C, np.float32: 0x0D}[arr.dtype.type]
    be = arr.astype(arr.dtype.newbyteorder(">"))
    payload = struct.pack(">BBBB", 0, 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + be.tobytes()
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(payload)


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_idx(tmp_path, gz):
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, size=(7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=7).astype(np.uint8)
    ext = ".gz" if gz else ""
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    _write_idx(str(raw / f"t10k-images-idx3-ubyte{ext}"), imgs)
    _write_idx(str(raw / f"t10k-labels-idx1-ubyte{ext}"), labels)
    ds = sfd.MNIST(str(tmp_path), train=False)
    assert len(ds) == 7
    x, y = ds[3]
    assert tuple(x.shape) == (1, 28, 28) and y == labels[3]
    np.testing.assert_allclose(x.numpy()[0], imgs[3] / 255.0, rtol=1e-6)
    xb, yb = next(iter(sfd.DataLoader(ds, batch_size=4)))
    np.testing.assert_allclose(xb.numpy()[:, 0], imgs[:4] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(yb.numpy(), labels[:4])
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        sfd.MNIST(str(tmp_path), train=True)
    with pytest.raises(RuntimeError, match="never downloads"):
        sfd.FashionMNIST(str(tmp_path), download=True)


def test_idx_types_and_truncation(tmp_path):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 5
    _write_idx(str(tmp_path / "f.idx"), a)
    np.testing.assert_array_equal(sfd.read_idx(str(tmp_path / "f.idx")), a)
    data = (tmp_path / "f.idx").read_bytes()
    (tmp_path / "t.idx").write_bytes(data[:-3])
    with pytest.raises(ValueError, match="truncated"):
        sfd.read_idx(str(tmp_path / "t.idx"))
    (tmp_path / "bad.idx").write_bytes(b"PK\x03\x04abcd")
    with pytest.raises(ValueError, match="not an IDX file"):
        sfd.read_idx(str(tmp_path / "bad.idx"))


def test_cifar10_binary_and_pickle_refused(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    labels = rng.integers(0, 10, size=5).astype(np.uint8)
    imgs = rng.integers(0, 256, size=(5, 3, 32, 32), dtype=np.uint8)  # (N, C, H, W) planes
    rec = np.concatenate([labels[:, None], imgs.reshape(5, -1)], axis=1)
    (folder / "test_batch.bin").write_bytes(rec.tobytes())
    ds = sfd.CIFAR10(str(tmp_path), train=False)
    x, y = ds[2]
    assert y == labels[2] and tuple(x.shape) == (3, 32, 32)
    np.testing.assert_allclose(x.numpy(), imgs[2] / 255.0, rtol=1e-6)
    xb, _ = next(iter(sfd.DataLoader(ds, batch_size=5)))
    np.testing.assert_allclose(xb.numpy(), imgs / 255.0, rtol=1e-6)
    (folder / "test_batch.bin").write_bytes(rec.tobytes()[:-7])
    with pytest.raises(ValueError, match="truncated"):
        sfd.CIFAR10(str(tmp_path), train=False)
    py = tmp_path / "py" / "cifar-10-batches-py"
    py.mkdir(parents=True)
    (py / "test_batch").write_bytes(pickle.dumps({"data": 1}))
    with pytest.raises(ValueError, match="pickle"):
        sfd.CIFAR10(str(tmp_path / "py"), train=False)


def test_text_corpus_char_and_byte(tmp_path):
    (tmp_path / "a.txt").write_text("hello world\n" * 20)
    (tmp_path / "b.txt").write_text("naïve café " * 10)
    (tmp_path / "skip.md").write_text("zzz")
    c = sfd.TextCorpus(str(tmp_path), block_size=8, pattern="*.txt", val_fraction=0.2)
    text = (tmp_path / "a.txt").read_text() + "\n" + (tmp_path / "b.txt").read_text()
    assert c.vocab_size == len(set(text)) and "z" not in c.itos
    assert c.decode(c.encode(text)) == text
    n_train = int(len(text) * 0.8)
    assert len(c) == n_train - 8 and len(c.split("val")) == len(text) - n_train - 8
    x, y = c[5]
    assert c.decode(x) == text[5:13] and c.decode(y) == text[6:14]
    batch = next(iter(sfd.DataLoader(c, batch_size=4)))
    assert c.decode(batch[0].numpy()[1]) == text[1:9]
    assert batch[0].dtype.name == "int64"
    b = sfd.TextCorpus(str(tmp_path), block_size=8, pattern="*.txt", level="byte")
    assert b.vocab_size == 256 and b.decode(b.encode("café")) == "café"
    # a unigram model can't beat the corpus' own entropy estimate by much; sanity bounds
    assert 0 < c.unigram_entropy() < np.log(c.vocab_size) + 1
    with pytest.raises(FileNotFoundError, match="no files match"):
        sfd.TextCorpus(str(tmp_path), pattern="*.rst")


def test_text_corpus_default_is_stdlib():
    c = sfd.TextCorpus(block_size=16, max_bytes=200_000)
    assert c.root == os.path.dirname(os.__file__)
    assert c.files[0].endswith(".py") and len(c) > 100_000


def test_synthetic_deterministic():
    a = sfd.SyntheticDataset(10, (3, 4), num_classes=5, seed=1)
    b = sfd.SyntheticDataset(10, (3, 4), num_classes=5, seed=1)
    np.testing.assert_array_equal(a[7][0], b[7][0])
    assert a[7][1] == b[7][1] and 0 <= a[7][1] < 5
    assert not np.array_equal(a[7][0], a[6][0])
    t = sfd.SyntheticTokens(4, 16, 50)
    x, y = t[1]
    np.testing.assert_array_equal(x[1:], y[:-1])


def test_digits():
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits

    tr, va = sfd.Digits(train=True), sfd.Digits(train=False)
    assert (len(tr), len(va)) == (1797 - 359, 359)  # val_fraction 0.2 of sklearn's 1797
    x, y = tr[0]
    assert tuple(x.shape) == (1, 8, 8) and x.dtype == sf.float32 and type(y) is int
    # train and val split sklearn's images (16 grey levels, scaled to [0, 1]) and labels
    # between them: the same (image, label) multiset, every image in exactly one of the two
    d = load_digits()

    def key(img, label):
        return (np.round(np.asarray(img, np.float64) * 16).astype(np.int64).tobytes(), int(label))

    ours = sorted(key(x.numpy(), y) for ds in (tr, va) for x, y in (ds[i] for i in range(len(ds))))
    assert ours == sorted(key(img / 16, t) for img, t in zip(d.images, d.target, strict=True))


def test_digits_without_sklearn_names_the_fix(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        sfd.Digits()
