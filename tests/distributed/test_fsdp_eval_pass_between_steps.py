"""A forward that no backward follows (an evaluation pass: under ``no_grad``, or in eval mode
with grad on) between ``optimizer.step()`` and the next ``zero_grad()`` must not change
training, as in PyTorch, where ``.grad`` is untouched by a forward. fully_shard (and FSDP1,
built on it) stashed each sharded ``.grad`` when a forward gathered the unit, so
``zero_grad()`` found nothing to clear and the next backward added the old gradient to the new
one (under ``no_grad``; pytorch/examples' fsdp_mnist.py, whose ``test()`` runs after every
epoch, trained differently from its second epoch on), or put it back on the gathered
parameter and failed ("non-broadcastable output operand", with grad on). The stash is now
taken when backward reaches the unit. Each rank feeds the same batch, so every step's loss
and gradient are one torch process's (computed here from the same seed: the two libraries'
initial weights are the same); without ``zero_grad`` the gradients accumulate as torch's do."""

import json

import numpy as np
import pytest
import torch

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

SCRIPT = r"""
import json, sys
import shardflow as torch
import shardflow.distributed as dist
from shardflow.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard

dist.init_process_group()
wrapper = sys.argv[1]
for evaluation, zero in (("no_grad", "zero"), ("grad", "zero"), ("no_grad", "accumulate")):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(6, 4)
    if wrapper == "fsdp1":
        model = FSDP(net)
    else:
        fully_shard(net[0])
        model = fully_shard(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for step in range(3):
        model.train()
        if zero == "zero":
            opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        grads = [p.grad.full_tensor().sum().item() for p in model.parameters()]
        opt.step()
        out.append([loss.item(), grads])
        if evaluation == "no_grad":
            model.eval()
            with torch.no_grad():
                model(x)
        else:
            model.eval()
            model(x)
    if dist.get_rank() == 0:
        print("RESULT", evaluation, zero, json.dumps(out))
"""


def _torch_reference(zero: bool) -> list:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(6, 4)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    out = []
    for _ in range(3):
        if zero:
            opt.zero_grad()
        loss = net(x).pow(2).sum()
        loss.backward()
        grads = [p.grad.sum().item() for p in net.parameters()]
        opt.step()
        out.append([loss.item(), grads])
        with torch.no_grad():
            net.eval()
            net(x)
            net.train()
    return out


@pytest.mark.parametrize("wrapper", ["fsdp1", "fully_shard"])
def test_eval_pass_between_steps_changes_nothing(wrapper):
    """Eval passes under no_grad and with grad on (zero_grad each step), and under no_grad
    with the gradients accumulated (no zero_grad): every loss and gradient sum of 3 steps."""
    res = run_mpi(SCRIPT, n=2, args=(wrapper,), timeout=90).check()
    lines = [ln.split(" ", 3) for ln in res.output.splitlines() if ln.startswith("RESULT")]
    assert [ln[1:3] for ln in lines] == [["no_grad", "zero"], ["grad", "zero"], ["no_grad", "accumulate"]], res.output
    for _, evaluation, zero, got in lines:
        ref = _torch_reference(zero == "zero")
        for step, ((loss, grads), (ref_loss, ref_grads)) in enumerate(zip(json.loads(got), ref, strict=True)):
            what = f"{evaluation} eval pass, {zero}, step {step}"
            np.testing.assert_allclose(loss, ref_loss, rtol=1e-5, err_msg=f"{what}: loss")
            np.testing.assert_allclose(grads, ref_grads, rtol=1e-5, atol=1e-6, err_msg=f"{what}: gradients")
