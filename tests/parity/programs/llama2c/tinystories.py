"""A stand-in for llama2.c's ``tinystories.py`` (the TinyStories download, its sentencepiece
tokenizer and ``PretokDataset``): ``Task.iter_batches`` with the same keyword arguments,
yielding endless ``(X, Y)`` batches of token ids, ``Y`` being ``X`` shifted by one, as the
original does from its pretokenized shards. The tokens are a fixed synthetic stream per
split (NumPy, seeded), so both frameworks read the same batches in the same order."""

import numpy as np
import torch


class Task:

    @staticmethod
    def iter_batches(batch_size, device, num_workers=0, *, split, max_seq_len, vocab_size,
                     vocab_source, dataset_dir):
        rng = np.random.default_rng({"train": 0, "val": 1}[split])
        # a stream with structure to learn: runs of a token and its successors
        start = rng.integers(0, vocab_size, 4096)
        stream = (start[:, None] + np.arange(3)).reshape(-1) % vocab_size
        chunk = max_seq_len + 1
        n = len(stream) // chunk
        while True:
            order = rng.permutation(n)
            for ix in order[: n - n % batch_size].reshape(-1, batch_size):
                rows = np.stack([stream[i * chunk:(i + 1) * chunk] for i in ix]).astype(np.int64)
                x = torch.from_numpy(rows[:, :-1].copy()).to(device, non_blocking=True)
                y = torch.from_numpy(rows[:, 1:].copy()).to(device, non_blocking=True)
                yield x, y
