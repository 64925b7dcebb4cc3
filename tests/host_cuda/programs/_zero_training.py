"""What the ZeRO / FSDP programs on host CUDA share: a small MLP, the global batch of each
step, one training step, and the reference: the same training in one CPU process on the
whole batch (every rank rebuilds the global batch from the step's seed)."""

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
import shardflow.optim as optim

ROWS = 2  # rows per rank


def make(dev="cpu"):
    # on 2 ranks: (7, 5) splits 4 + 3 rows (padded gathers), (4, 7) 2 + 2,
    # (1, 4) and (1,) are too small to shard (replicated)
    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 4), nn.Tanh(),
                         nn.Linear(4, 1)).to(dev)


def batch(step, world):
    g = np.random.default_rng(step)
    return (g.standard_normal((ROWS * world, 5)).astype(np.float32),
            g.standard_normal((ROWS * world, 1)).astype(np.float32))


def step_on(model, opt, step, dev, rank, world, local):
    """One step (clip to norm 0.5, then ``opt``) on the global batch, or this rank's rows."""
    X, Y = batch(step, world)
    if local:
        X, Y = X[rank * ROWS:(rank + 1) * ROWS], Y[rank * ROWS:(rank + 1) * ROWS]
    loss = F.mse_loss(model(sf.tensor(X, device=dev)), sf.tensor(Y, device=dev))
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    opt.zero_grad()
    return loss


def adamw(params):
    return optim.AdamW(params, lr=0.02, weight_decay=0.1)


def reference(rank, world, steps=4):
    """(model, AdamW optimizer) after ``steps`` steps of one CPU process on the whole batch."""
    ref = make()
    ref_opt = adamw(ref.parameters())
    for step in range(steps):
        step_on(ref, ref_opt, step, "cpu", rank, world, local=False)
    return ref, ref_opt


def close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(what))
