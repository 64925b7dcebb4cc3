"""The evaluation phase of ``shardflow train``: mean validation loss (and accuracy, for the
image tasks) over the fixed validation batches (``batches.validation_batches``)."""

from __future__ import annotations

import numpy as np

import shardflow as sf
import shardflow.data as sfdata

from .batches import fetch
from .layout import Layout


class Evaluator:
    """``evaluate() -> (loss, accuracy or None)``, in eval mode and without grad; the model is
    back in training mode afterwards.

    Which module evaluates: the trained model itself (under DDP without its wrapper: no
    gradients to reduce), the global-tensor wrapper (it lays out the batch), or, under
    ``--pp``, the whole model that ``pipe.sync()`` (a collective) gives rank 0; the other
    ranks return ``(nan, None)`` then."""

    def __init__(self, task, model, layout: Layout, pipe, batches: list):
        self.task, self.model, self.pipe, self.batches = task, model, pipe, batches
        self.raw_model = task.model
        self.global_tensors = layout.global_tensors is not None

    def __call__(self) -> tuple[float, float | None]:
        net = self.model if self.global_tensors else self.raw_model
        if self.pipe is not None:  # the whole model on rank 0 (a collective); rank 0 evaluates
            net = self.pipe.sync()
            if net is None:
                return float("nan"), None
        self.model.eval()
        net.eval()
        losses, accs = [], []
        with sf.no_grad():
            for idx in self.batches:
                batch = sfdata.default_collate(fetch(self.task.val_ds, idx))
                loss, acc = self.task.loss(net, batch)
                losses.append(loss.item())
                if acc is not None:
                    accs.append(acc)
        self.model.train()
        return float(np.mean(losses)), (float(np.mean(accs)) if accs else None)
