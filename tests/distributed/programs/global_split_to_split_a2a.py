"""S(0) -> S(1) on an even split is one all_to_all, with the right values and gradient."""

import warnings

import numpy as np

import shardflow as sf
from shardflow.distributed import comm_plan, placement, sbp

from ._common import close, spread


def main(argv):
    warnings.simplefilter("ignore")
    mesh = placement("cpu")
    leaf = sf.tensor(np.arange(48, dtype=np.float32).reshape(4, 12), requires_grad=True)
    x = spread(leaf, mesh, sbp.split(0))
    with comm_plan() as plan:
        y = x.to_global(sbp=sbp.split(1))
    assert sorted(plan.counts()) == ["all_to_all"], str(plan)
    close(y.numpy(), leaf.numpy(), "a2a")
    y.sum().backward()
    close(leaf.grad.numpy(), np.ones((4, 12)), "a2a grad")
