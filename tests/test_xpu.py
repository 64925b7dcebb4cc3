"""``shardflow.xpu`` answers as a PyTorch build without XPU (pytorch/examples choose their
device with ``torch.xpu.is_available()``, e.g. mnist_forward_forward)."""

import pytest
import torch

import shardflow


def test_xpu_queries_match_torch_without_xpu():
    assert shardflow.xpu.is_available() is torch.xpu.is_available() is False
    assert shardflow.xpu.device_count() == torch.xpu.device_count() == 0
    assert shardflow.xpu.is_initialized() is torch.xpu.is_initialized() is False


@pytest.mark.parametrize("name,args", [("current_device", ()), ("set_device", (0,)), ("synchronize", ()),
                                       ("get_device_name", ()), ("get_device_capability", ()),
                                       ("get_device_properties", ())])
def test_xpu_calls_that_need_a_device_raise_like_torch(name, args):
    with pytest.raises(AssertionError):
        getattr(torch.xpu, name)(*args)
    with pytest.raises(AssertionError, match=r"shardflow\.xpu\.is_available\(\).*device='cpu'"):
        getattr(shardflow.xpu, name)(*args)


def test_the_examples_device_choice_runs_on_the_cpu():
    use_xpu = shardflow.xpu.is_available()
    device = shardflow.device("xpu") if use_xpu else shardflow.device("cpu")
    assert device.type == "cpu"
