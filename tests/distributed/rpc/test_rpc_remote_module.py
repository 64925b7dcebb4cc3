"""RemoteModule against the same Linear in one process (remote_module_program.py)."""

import numpy as np

import shardflow as torch
import shardflow.optim as optim

from . import remote_module_program as prog
from .workers import launch


def test_remote_module_forward_training_and_sending():
    r = launch("remote_module_program.py", 3, timeout=120)[0].result()
    local = prog.seeded_linear(3, 2)
    x = torch.tensor(prog.data())
    y = local(x).detach().numpy()
    for key in ("forward", "forward_async", "from_worker2"):
        np.testing.assert_allclose(r[key], y, rtol=1e-6, atol=1e-6)
    assert r["n_params"] == [2, "worker1"]
    opt = optim.SGD(local.parameters(), lr=0.1)
    (local(x) ** 2).sum().backward()
    opt.step()
    after = local(x).detach().numpy()
    np.testing.assert_allclose(r["after_step"], after, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["init_from_rref"], after, rtol=1e-5, atol=1e-6)
    assert r["training_remote"] is False
    assert r["not_supported"] == [
        "Method ``parameters`` not supported for RemoteModule. Please use ``remote_parameters`` instead.",
        "Method ``to`` not supported for RemoteModule", "Method ``state_dict`` not supported for RemoteModule"]
    assert "Could not parse remote_device" in r["bad_device"]
