"""torch's device types can be named (``torch.device("mps")`` in a device-picking line), and a
tensor put on one shardflow has no backend for raises torch's own error; an unknown type is
torch's RuntimeError (it was ValueError "unknown device type" for all of them)."""
import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("name", ["mps", "xpu", "ipu", "xla", "mtia", "tpu"])
def test_devices_as_torch(name):
    def attempt(lib):
        out = []
        for make in (lambda: repr(lib.device(name)), lambda: lib.ones(1).to(name), lambda: lib.nn.Linear(1, 1).to(name)):
            try:
                r = make()
                out.append(r if isinstance(r, str) else "ok")
            except Exception as e:  # noqa: BLE001 - the exception is what is compared
                out.append((type(e).__name__, str(e).split(". Ensure")[0]))
        return out
    assert attempt(sf) == attempt(torch)
