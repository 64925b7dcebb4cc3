"""A LayerNorm on sequence shards, then Colwise(input S(1)) -> Rowwise(output S(1)): forward
is one all_gather and one reduce_scatter (Megatron's sequence parallelism), output and every
gradient equal to one process, no fallback (warnings are errors)."""

import warnings

import numpy as np

import shardflow as sf
import shardflow.nn as nn
from shardflow.distributed import comm_plan, placement, sbp
from shardflow.distributed.tensor_parallel import (
    ColwiseParallel,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 16)
        self.proj = nn.Linear(16, 8)

    def forward(self, x):
        return x + self.proj(self.fc(self.ln(x)).relu())


def main(argv):
    warnings.simplefilter("error")
    sf.manual_seed(0)
    ref = Block()
    sf.manual_seed(0)
    m = Block()
    p = placement("cpu")
    parallelize_module(m, p, {"ln": SequenceParallel(),
                              "fc": ColwiseParallel(input_layouts=sbp.split(1), use_local_output=False),
                              "proj": RowwiseParallel(output_layouts=sbp.split(1),
                                                      use_local_output=False)})
    m.to_global(p, sbp.broadcast)
    x = sf.tensor(np.random.default_rng(0).standard_normal((2, 6, 8)).astype(np.float32))
    gx = x.to_global(p, sbp.broadcast).to_global(sbp=sbp.split(1))
    with comm_plan() as plan:
        y = m(gx)
        (y * y).sum().backward()
    yr = ref(x)
    (yr * yr).sum().backward()
    assert y.sbp == (sbp.split(1),), y.sbp
    assert np.abs(y.numpy() - yr.numpy()).max() < 1e-5
    for (n, a), (_, b) in zip(m.named_parameters(), ref.named_parameters()):
        assert np.abs(a.grad.numpy() - b.grad.numpy()).max() < 1e-5, n
    assert dict(plan.counts("forward")) == {"all_gather": 1, "reduce_scatter": 1}, str(plan)
