"""``print(model)`` of an FSDP1 model shows each wrapped module as its own class, as PyTorch's
does: ``FullyShardedDataParallel(\\n  (_fsdp_wrapped_module): Net(`` (pytorch/examples'
fsdp_mnist.py prints its model). shardflow builds FSDP1 on fully_shard, whose modules are
``FSDP<Class>`` (FSDP2's naming, kept for ``fully_shard`` itself), and printed ``FSDPNet(`` /
``FSDPLinear(``. In one process (a world of one) for both libraries."""

import functools
import socket

import torch
import torch.distributed as tdist

import shardflow


def _build(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.fc1 = nn.Linear(576, 64)
            self.fc2 = nn.Linear(64, 10)

    return Net()


def _torch_repr() -> str:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = FSDP(_build(torch), auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=20000),
                     device_id=torch.device("cpu"))
        return repr(model)
    finally:
        tdist.destroy_process_group()


def test_fsdp1_model_prints_the_wrapped_classes_as_torch():
    from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP
    from shardflow.distributed.fsdp import fully_shard
    from shardflow.distributed.fsdp.wrap import size_based_auto_wrap_policy

    model = FSDP(_build(shardflow), auto_wrap_policy=functools.partial(size_based_auto_wrap_policy,
                                                                       min_num_params=20000))
    expected = _torch_repr()
    assert "(_fsdp_wrapped_module): Net(" in expected and "FSDPNet" not in expected
    assert repr(model) == expected
    # fully_shard itself keeps FSDP2's FSDP<Class> names, as PyTorch's
    plain = shardflow.nn.Sequential(shardflow.nn.Linear(2, 2))
    fully_shard(plain)
    assert repr(plain).startswith("FSDPSequential(")
