"""Child-process targets for tests/test_multiprocessing*.py. Spawned and forkserver children
import this module by name, so it imports only what the children need (no torch, no pytest):
the Hogwild helpers take the library (shardflow or torch) from the caller, so both run the
same program."""

import importlib

import numpy as np

import shardflow


def add_one_to_weight(lib_name, model):
    """The issue's program: a child updates the shared model in place."""
    with importlib.import_module(lib_name).no_grad():
        model.weight.add_(1.0)


def echo_and_make(inbox, outbox, release, report):
    """Receive a tensor, add 1 to it in place and send it back; send a tensor of our own,
    wait until the parent wrote into it, and report what we see. Stays alive until the
    parent has received both (a file_descriptor sender must be alive when its message is
    received)."""
    x = inbox.get(timeout=60)
    was_shared = x.is_shared()
    x.add_(1.0)
    outbox.put(x)
    mine = shardflow.zeros(3)
    outbox.put(mine)
    release.wait(60)
    report.put((was_shared, mine.tolist()))


def echo(inbox, outbox, go=None, done=None):
    """Add 1 to the received tensor and send it back, then exit at once. With ``go``, wait
    for that event before receiving; with ``done``, for that one before exiting."""
    if go is not None and not go.wait(60):
        raise TimeoutError("the parent did not say go within 60 s")
    x = inbox.get(timeout=60)
    x.add_(1.0)
    outbox.put(x)
    if done is not None and not done.wait(60):
        raise TimeoutError("the parent did not say done within 60 s")


def scale_in_place(t):
    t.mul_(2.0)
    return t


# ---------------------------------------------------------------- Hogwild
def toy_data(n=64, d=4, seed=0):
    """A regression task: y = tanh(X @ a) @ b + noise, as float32 NumPy arrays."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    a = rng.standard_normal((d, 3)).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    y = np.tanh(x @ a) @ b + 0.01 * rng.standard_normal((n, 1)).astype(np.float32)
    return x, y.astype(np.float32)


def toy_model(lib, seed=1):
    """Linear(4, 8) -> Tanh -> Linear(8, 1) with weights drawn from a seeded NumPy generator,
    so shardflow and torch start from the same values."""
    rng = np.random.default_rng(seed)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 1))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(0.5 * rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return model


def full_loss(lib, model, x, y):
    with lib.no_grad():
        return float(lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y)))


def worker_step(lib, rank, model, batch):
    """mnist_hogwild's ``train`` as one step at a time: process ``rank``'s own optimizer
    (SGD with momentum) and its own half of the data; ``step(k)`` runs its k-th step."""
    x, y = toy_data()
    half = len(x) // 2
    x, y = x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half]
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)

    def step(k):
        rows = slice((k * batch) % half, (k * batch) % half + batch)
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(lib.tensor(x[rows])), lib.tensor(y[rows]))
        loss.backward()
        opt.step()

    return step


def hogwild_train(lib_name, rank, model, steps, batch, turns=None):
    """One Hogwild process: ``steps`` updates of the shared ``model`` (``lib_name``: the
    library to import, "shardflow" or "torch", a name so that it pickles). With ``turns`` (one
    semaphore per process) the processes take turns step by step, so the run is
    deterministic; without, they run freely as in mnist_hogwild."""
    step = worker_step(importlib.import_module(lib_name), rank, model, batch)
    for k in range(steps):
        if turns is not None and not turns[rank].acquire(timeout=60):
            raise TimeoutError(f"process {rank} waited 60 s for its turn at step {k}")
        step(k)
        if turns is not None:
            turns[(rank + 1) % len(turns)].release()


def share_and_die(sharing, kill):
    """A process that makes a shared tensor, then dies (``os.kill(SIGKILL)``: no cleanup of
    its own) or exits normally; prints its pid first."""
    import os
    import signal

    import shardflow.multiprocessing as smp

    smp.set_sharing_strategy(sharing)
    print(os.getpid(), flush=True)
    t = shardflow.ones(1000).share_memory_()
    assert t.is_shared()
    if kill:
        os.kill(os.getpid(), signal.SIGKILL)
