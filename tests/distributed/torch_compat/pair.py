"""Run torch (CPU, gloo) next to shardflow in the same MPI ranks, for comparisons.

``init_pair(sf_backend=None)`` starts shardflow's world (``dist.init_process_group`` when
``sf_backend`` is given, else the MPI world), then PyTorch's default group over gloo on a
free local port that rank 0 picks and broadcasts over MPI; ``WORLD_SIZE``/``RANK`` are set
for programs that read them (as under torchrun). Returns ``(rank, world_size)``.
"""

import os
import socket
import sys
from datetime import timedelta

import numpy as np


def init_pair(sf_backend=None):
    import torch.distributed as tdist

    import shardflow.distributed as sf_dist
    from shardflow import comm

    if sf_backend is not None:
        sf_dist.init_process_group(sf_backend)
    world = comm.get_world()
    r, n = world.rank, world.size
    port = None
    if r == 0:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
    port = world.broadcast_object(port, 0)
    shardflow_hook = sys.excepthook
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=r,
                             world_size=n, timeout=timedelta(seconds=60))
    # torch's hook buffers the traceback around the previous one, and the MPI job aborts
    # first: put shardflow's back so a failing rank's traceback is printed
    sys.excepthook = shardflow_hook
    os.environ["WORLD_SIZE"], os.environ["RANK"] = str(n), str(r)
    return r, n


def close(a, b, what, tol=1e-5):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = float(np.abs(a - b).max()) if a.size else 0.0
    scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
    assert err <= tol * scale, (what, err)


def copy_weights(torch_model, sf_model):
    """shardflow's model takes torch's (whole, local) parameters and buffers by name."""
    import shardflow as sf

    state = {k: sf.tensor(v.detach().numpy().copy()) for k, v in torch_model.state_dict().items()}
    sf_model.load_state_dict(state)


def whole(t):
    """A tensor's whole (logical) value as a NumPy array: a shardflow global tensor or a
    torch DTensor is gathered first (a collective every rank calls)."""
    if getattr(t, "is_global", False):  # shardflow
        return t.full_tensor().detach().numpy()
    from torch.distributed.tensor import DTensor

    if isinstance(t, DTensor):
        t = t.full_tensor()
    return t.detach().numpy()
