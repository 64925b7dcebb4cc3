"""DDP without ``find_unused_parameters``: a parameter that got no gradient makes the next
forward raise PyTorch's error, naming the parameters, their count and indices, with one
bucket and with one bucket per parameter."""

import shardflow as sf
import shardflow.distributed as dist
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
        self.heads = nn.ModuleList([nn.Linear(6, 3), nn.Linear(6, 3)])

    def forward(self, x):
        return self.heads[0](self.body(x))  # heads.1 gets no gradient


def main(argv):
    dist.init_process_group()
    for cap in (25, 0.0001):  # one bucket, one bucket per parameter
        ddp = DDP(Net(), bucket_cap_mb=cap)
        x = sf.randn(4, 6)
        F.mse_loss(ddp(x), sf.zeros(4, 3)).backward()
        try:
            ddp(x)
        except RuntimeError as e:
            msg = str(e)
            assert (f"Parameters which did not receive grad for rank {dist.get_rank()}: "
                    "heads.1.weight, heads.1.bias (2 of 6 parameters; indices 4, 5)") in msg, msg
            assert "find_unused_parameters=True" in msg, msg
        else:
            raise AssertionError(f"bucket_cap_mb={cap}: expected the unfinished-reduction error")
    # end as a program should, so that another can follow in the same job (programs_in_one_job)
    dist.destroy_process_group()
