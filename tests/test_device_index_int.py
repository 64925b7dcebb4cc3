"""A bare int as a device (``model.to(rank)``, ``tensor.to(0)``, ``zeros(2, device=0)``,
``torch.device(0)``): PyTorch's shorthand for that index of the current accelerator. On a
machine without one, torch raises RuntimeError "Cannot access accelerator device when none is
available."; shardflow raised ValueError "unknown device type '0'" (found running the DDP
tutorial series, whose ``Trainer`` does ``model.to(gpu_id)``). With an accelerator it is
``cuda:N`` (tests/host_cuda/test_device_index_int_host_cuda.py)."""

import pytest
import torch

import shardflow

NO_ACCELERATOR = "Cannot access accelerator device when none is available."


@pytest.mark.parametrize("call", [
    lambda lib: lib.device(0),
    lambda lib: lib.device(1),
    lambda lib: lib.zeros(2, device=0),
    lambda lib: lib.zeros(2).to(0),
    lambda lib: lib.zeros(2).to(device=1),
    lambda lib: lib.zeros(2).to(0, dtype=lib.float64),
    lambda lib: lib.nn.Linear(2, 2).to(0),
])
def test_int_device_without_accelerator_raises_as_torch(call):
    with pytest.raises(RuntimeError, match="Cannot access accelerator device") as th:
        call(torch)
    assert str(th.value) == NO_ACCELERATOR
    with pytest.raises(RuntimeError) as sf:
        call(shardflow)
    message = str(sf.value)
    assert message.startswith(NO_ACCELERATOR), message
    assert "'cpu'" in message  # the fix


def test_negative_int_device_raises_as_torch():
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
            lib.device(-1)


def test_string_and_device_forms_unchanged():
    assert shardflow.device("cpu") == shardflow.device(shardflow.device("cpu"))
    assert str(shardflow.device("cuda", 1)) == str(torch.device("cuda", 1)) == "cuda:1"
    assert repr(shardflow.device("cuda:0")) == repr(torch.device("cuda:0"))
