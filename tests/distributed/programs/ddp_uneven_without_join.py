"""Expected to fail (run as a script by ``shardflow run``): DDP with 3 batches on rank 0 and 2
on rank 1, no ``join()``. torch (gloo) hangs in rank 0's third all-reduce; here rank 1's
``destroy_process_group`` sees rank 0 waiting for it and raises, naming both ranks, the
all-reduce and the fix (``with model.join():``)."""

import shardflow as torch
import shardflow.distributed as dist
import shardflow.nn as nn


def main():
    dist.init_process_group("gloo")
    r = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3 if r == 0 else 2):
        opt.zero_grad()
        model(torch.randn(3, 4)).sum().backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
