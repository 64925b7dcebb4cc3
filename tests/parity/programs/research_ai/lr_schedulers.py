# ruff: noqa: E501, F401, I001  (the program's own style, kept)
"""
The examples in the docstrings of ``torch/optim/lr_scheduler.py`` (BSD-3-Clause, as PyTorch)
for ``OneCycleLR``, ``CyclicLR`` (``triangular2`` and ``exp_range``), ``SequentialLR``
(``ConstantLR`` then ``ExponentialLR``), ``ChainedScheduler``, ``CosineAnnealingWarmRestarts``
(stepped by fractional epochs, as its docstring shows), ``PolynomialLR``, ``LinearLR``,
``LambdaLR`` / ``MultiplicativeLR`` and ``ReduceLROnPlateau``, each run as its docstring's
``for epoch in range(100): train(...); validate(...); scheduler.step()`` with ``train``
filled in by one SGD or Adam step on a small regression and fewer epochs; the learning
rates (and momenta, where the scheduler cycles them) printed each step, and the
``state_dict`` round trip of ``OneCycleLR`` into a fresh scheduler.
"""
import torch
import torch.nn as nn
from torch.optim import lr_scheduler

torch.manual_seed(0)
data = torch.randn(32, 3)
target = data.sum(1, keepdim=True)


def run(name, make_optimizer, make_scheduler, steps, metric=False, show_momentum=False):
    model = nn.Linear(3, 1)
    optimizer = make_optimizer(model.parameters())
    scheduler = make_scheduler(optimizer)
    lrs = []
    for epoch in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if metric:
            scheduler.step(round(loss.item(), 1) if epoch < 4 else 1.0)
        else:
            scheduler.step()
        group = optimizer.param_groups[0]
        lrs.append(round(group["lr"], 7))
        if show_momentum:
            lrs.append(round(group["betas"][0] if "betas" in group else group["momentum"], 7))
    print(name, lrs)
    print(name, "last_lr", [round(v, 7) for v in scheduler.get_last_lr()] if hasattr(scheduler, "get_last_lr") else None,
          "loss", f"{loss.item():.6f}")
    return optimizer, scheduler


sgd = lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9)

# OneCycleLR: data_loader of 3 batches, 4 epochs
opt, sched = run("OneCycleLR", sgd, lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.01, steps_per_epoch=3, epochs=4), 11, show_momentum=True)
state = sched.state_dict()
fresh = lr_scheduler.OneCycleLR(torch.optim.SGD(nn.Linear(3, 1).parameters(), lr=0.1, momentum=0.9), max_lr=0.01, steps_per_epoch=3, epochs=4)
fresh.load_state_dict(state)
print("OneCycleLR state", sorted(k for k in state if not k.startswith("_")), state["last_epoch"], state["total_steps"])
print("OneCycleLR three_phase linear", run("three_phase", lambda p: torch.optim.Adam(p, lr=0.01), lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=10, three_phase=True, anneal_strategy="linear", pct_start=0.25), 9, show_momentum=True)[1].last_epoch)

run("CyclicLR triangular2", sgd, lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2"), 12, show_momentum=True)
run("CyclicLR exp_range", sgd, lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=2, mode="exp_range", gamma=0.9), 10)

run("SequentialLR", lambda p: torch.optim.SGD(p, lr=1.0), lambda o: lr_scheduler.SequentialLR(
    o, schedulers=[lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2), lr_scheduler.ExponentialLR(o, gamma=0.9)], milestones=[2]), 6)
run("ChainedScheduler", lambda p: torch.optim.SGD(p, lr=1.0), lambda o: lr_scheduler.ChainedScheduler(
    [lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2), lr_scheduler.ExponentialLR(o, gamma=0.9)]), 5)
run("PolynomialLR", lambda p: torch.optim.SGD(p, lr=0.1), lambda o: lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0), 6)
run("LinearLR", lambda p: torch.optim.SGD(p, lr=0.05), lambda o: lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=4), 6)
run("LambdaLR", lambda p: torch.optim.SGD(p, lr=0.05), lambda o: lr_scheduler.LambdaLR(o, lr_lambda=lambda epoch: 0.95 ** epoch), 4)
run("MultiplicativeLR", lambda p: torch.optim.SGD(p, lr=0.05), lambda o: lr_scheduler.MultiplicativeLR(o, lr_lambda=lambda epoch: 0.95), 4)
run("ReduceLROnPlateau", lambda p: torch.optim.SGD(p, lr=0.1), lambda o: lr_scheduler.ReduceLROnPlateau(o, "min", patience=1, factor=0.5), 10, metric=True)

# CosineAnnealingWarmRestarts stepped by fractional epochs (its docstring's example)
model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2, eta_min=0.001)
iters = 3
lrs = []
for epoch in range(5):
    for i in range(iters):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(data), target).backward()
        optimizer.step()
        scheduler.step(epoch + i / iters)
        lrs.append(round(scheduler.get_last_lr()[0], 7))
print("CosineAnnealingWarmRestarts", lrs, scheduler.T_i, scheduler.T_cur)
