"""The training loop the tf.distribute-style strategy programs share: three SGD/Adam steps on
a global batch of 8, written once as a user of the strategy would (``strategy.run``,
``apply_gradients``, ``reduce("SUM", loss)``)."""

import numpy as np

import shardflow as sf
import shardflow.nn.functional as F

GLOBAL_BATCH = 8


def batches():
    for t in range(3):
        g = np.random.default_rng(t)
        yield (g.standard_normal((GLOBAL_BATCH, 4)).astype(np.float32),
               g.standard_normal((GLOBAL_BATCH, 2)).astype(np.float32))


def train(strategy, model, opt):
    """Train ``model`` (made in ``strategy.scope()``) for three steps; (parameters, losses)."""
    strategy.broadcast_parameters(model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y, reduction="sum") / (GLOBAL_BATCH * 2)  # compute_average_loss
        loss.backward()
        return loss

    total = []
    for x, y in strategy.experimental_distribute_dataset(batches()):
        loss = strategy.run(step, args=(x, y))
        strategy.apply_gradients(opt, model.parameters())
        total.append(strategy.reduce("SUM", loss, axis=None).item())
    return [p.numpy() for p in model.parameters()], total


def mlp(seed):
    sf.manual_seed(seed)
    return sf.nn.Sequential(sf.nn.Linear(4, 8), sf.nn.Tanh(), sf.nn.Linear(8, 2))
