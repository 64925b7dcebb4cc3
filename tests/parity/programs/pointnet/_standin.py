"""A ShapeNet-part-layout folder of synthetic point clouds for pointnet.pytorch's
``ShapeNetDataset``: three categories (a box, a sphere, a cylinder, each cloud scaled and
noised by a NumPy generator), ``synsetoffset2category.txt``, the train/test file lists,
``.pts`` / ``.seg`` files and ``num_seg_classes.txt``."""

import json

import numpy as np

CATEGORIES = [("Airplane", "02691156"), ("Chair", "03001627"), ("Lamp", "03636649")]


def _cloud(kind, rng, n):
    if kind == 0:  # box surface-ish
        p = rng.uniform(-1, 1, (n, 3)) * [1.0, 0.3, 0.6]
    elif kind == 1:  # sphere
        p = rng.normal(size=(n, 3))
        p /= np.linalg.norm(p, axis=1, keepdims=True)
    else:  # cylinder
        t = rng.uniform(0, 2 * np.pi, n)
        p = np.stack([0.4 * np.cos(t), rng.uniform(-1, 1, n), 0.4 * np.sin(t)], 1)
    return p * rng.uniform(0.5, 1.5) + rng.normal(0, 0.01, (n, 3))


def write_shapenet(root, per_class=(6, 2), n_points=48, seed=0):
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "synsetoffset2category.txt").write_text("".join(f"{n}\t{c}\n" for n, c in CATEGORIES))
    (root / "num_seg_classes.txt").write_text("".join(f"{n}\t{k}\n" for (n, _), k in zip(CATEGORIES, (4, 4, 2))))
    (root / "train_test_split").mkdir(exist_ok=True)
    lists = {"train": [], "test": []}
    for kind, (_, code) in enumerate(CATEGORIES):
        for sub in ("points", "points_label"):
            (root / code / sub).mkdir(parents=True, exist_ok=True)
        for split, count in zip(("train", "test"), per_class):
            for j in range(count):
                uid = f"{split}{kind}{j:03d}"
                p = _cloud(kind, rng, n_points)
                np.savetxt(root / code / "points" / f"{uid}.pts", p, fmt="%.6f")
                np.savetxt(root / code / "points_label" / f"{uid}.seg", (p[:, 1] > 0).astype(int) + 1, fmt="%d")
                lists[split].append(f"shape_data/{code}/{uid}")
    for split, files in lists.items():
        order = rng.permutation(len(files))
        (root / "train_test_split" / f"shuffled_{split}_file_list.json").write_text(
            json.dumps([files[i] for i in order]))
