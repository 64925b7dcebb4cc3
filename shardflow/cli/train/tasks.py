"""The model phase of ``shardflow train``: what differs between tasks (data sets, model,
loss, evaluation metric, optimizer, the demo at the end), and :func:`make_task`, which
builds a task's data and model, seeded, on the run's device."""

from __future__ import annotations

import hashlib
import math
import os

import numpy as np

import shardflow as sf
import shardflow.data as sfdata
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow import models

from .config import ConfigError, TrainConfig


def make_task(cfg: TrainConfig) -> Task:
    """The task's data and model (initialised from ``--seed``), the model on ``--device``
    (before any optimizer is built on its parameters)."""
    sf.manual_seed(cfg.seed)
    task = GPTTask(cfg) if cfg.task == "gpt" else ImageTask(cfg)
    task.device = cfg.device
    if cfg.device != "cpu":
        task.model.to(cfg.device)
    return task


class Task:
    """What differs between tasks: data, model, loss, eval metric, final demo."""

    unit = "samples"
    device = "cpu"
    _identity = None

    def data_identity(self) -> dict:
        """What the run trains on, recorded in every checkpoint and compared on ``--resume``
        (``checkpoints.check_same_data``): the source, the size, a SHA-256 of the content
        (and for GPT the vocabulary and its hash). Computed once."""
        if self._identity is None:
            self._identity = self._data_identity()
        return self._identity

    def _data_identity(self) -> dict:
        raise NotImplementedError

    def on_device(self, batch):
        """The batch's tensors on the task's device (batches are collated on the CPU)."""
        return batch if self.device == "cpu" else [t.to(self.device) for t in batch]

    def tokens_per_batch(self, cfg):
        return cfg.batch_size


class GPTTask(Task):
    unit = "tok"

    def __init__(self, cfg: TrainConfig):
        where = cfg.data or "the default corpus"
        try:
            self.corpus = sfdata.TextCorpus(cfg.data, block_size=cfg.block_size,
                                            max_bytes=cfg.max_corpus_bytes)
        except ValueError as e:  # too little text for one block
            raise ConfigError(f"--data: {where}: {e}") from None
        self.train_ds, self.val_ds = self.corpus, self.corpus.split("val")
        if len(self.val_ds.data) <= cfg.block_size:
            raise ConfigError(
                f"--data: the validation split of {where} has {len(self.val_ds.data)} tokens, not "
                f"more than --block-size {cfg.block_size}; fix: give more text or a smaller "
                "--block-size")
        self.baseline = self.corpus.unigram_entropy()
        mc = models.GPTConfig(block_size=cfg.block_size, vocab_size=self.corpus.vocab_size,
                              n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.n_embd, dropout=cfg.dropout)
        self.model = models.GPT(mc)

    def tokens_per_batch(self, cfg):
        return cfg.batch_size * cfg.block_size

    def loss(self, model, batch):
        x, y = self.on_device(batch)
        _, loss = model(x, y)
        return loss, None

    def optimizer(self, cfg):
        return self.model.configure_optimizers(cfg.weight_decay, cfg.lr, betas=(0.9, 0.99))

    def extra_state(self):
        return {"vocab": "".join(self.corpus.itos) if self.corpus.itos else None}

    def _data_identity(self) -> dict:
        c = self.corpus
        vocab = "".join(c.itos) if c.itos else None  # None: byte level (all 256 bytes)
        tokens = np.concatenate([c._tokens["train"], c._tokens["val"]]).astype(np.int32)
        return {"source": os.path.abspath(c.root), "vocab": vocab, "vocab_size": int(c.vocab_size),
                "vocab_sha256": _sha256((vocab or "").encode("utf-8", "surrogatepass")),
                "tokens": int(tokens.size), "tokens_sha256": _sha256(tokens.tobytes())}

    def finish(self, cfg, log):
        prompt = "def "
        idx = sf.tensor(self.corpus.encode(prompt)[None], device=self.device)
        self.model.eval()
        try:
            out = self.model.generate(idx, cfg.sample_tokens, temperature=0.8, top_k=20,
                                      generator=sf.Generator().manual_seed(cfg.seed))
        except RuntimeError as e:
            if "probability tensor contains" not in str(e):
                raise
            # the run is over and its checkpoint written: a sample is not worth failing it for
            log("\n--- no sample: the model's next-token probabilities are not finite (its "
                "weights overflowed; with --on-nonfinite skip the run keeps going past such "
                "steps): lower --lr or use --on-nonfinite raise to stop at the first one ---")
            return
        log("\n--- sample (prompt 'def ') ---\n" + self.corpus.decode(out.numpy()[0]) + "\n---")


class ImageTask(Task):
    def __init__(self, cfg: TrainConfig):
        self.source = cfg.data if cfg.task == "mnist" else None
        if cfg.task == "mnist":
            self.train_ds = sfdata.MNIST(cfg.data, train=True)
            self.val_ds = sfdata.MNIST(cfg.data, train=False)
            shape, ncls = (1, 28, 28), 10
        else:
            self.train_ds = sfdata.Digits(train=True, seed=cfg.seed)
            self.val_ds = sfdata.Digits(train=False, seed=cfg.seed)
            shape, ncls = (1, 8, 8), 10
        if cfg.batch_size > len(self.train_ds):
            raise ConfigError(
                f"--batch-size: got {cfg.batch_size} but the training set has only "
                f"{len(self.train_ds)} samples; fix: use --batch-size {min(64, len(self.train_ds))}"
            )
        if cfg.model == "lenet" and shape[1] == 28:
            self.model = models.LeNet5(models.LeNetConfig(num_classes=ncls))
        else:
            self.model = models.MLP(models.MLPConfig(in_features=int(np.prod(shape)),
                                                     hidden=tuple(cfg.hidden), num_classes=ncls))
        self.baseline = math.log(ncls)

    def loss(self, model, batch):
        x, y = self.on_device(batch)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        acc = float((logits.argmax(-1) == y).float().mean().item())
        return loss, acc

    def optimizer(self, cfg):
        return optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    def extra_state(self):
        return {}

    def _data_identity(self) -> dict:
        arrays = [getattr(ds, name) for ds in (self.train_ds, self.val_ds)
                  for name in ("data", "targets")]
        digest = hashlib.sha256()
        for a in arrays:
            digest.update(np.ascontiguousarray(a).tobytes())
        source = os.path.abspath(self.source) if self.source else "scikit-learn digits"
        return {"source": source, "samples": len(self.train_ds) + len(self.val_ds),
                "tokens_sha256": digest.hexdigest()}

    def finish(self, cfg, log):
        self.model.eval()
        xs, ys = sfdata.default_collate([self.val_ds[i] for i in range(min(16, len(self.val_ds)))])
        with sf.no_grad():
            pred = self.model(xs).argmax(-1).numpy()
        log(f"predictions: {pred.tolist()}\nlabels:      {ys.numpy().tolist()}")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
