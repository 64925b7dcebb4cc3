"""Ranks start with different weights; ``torch.distributed.utils._sync_module_states`` makes
them rank ``src``'s, except the ignored names (and the buffers when ``broadcast_buffers`` is
False)."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
from shardflow.distributed.utils import _sync_module_states


def _model(rank):
    sf.manual_seed(100 + rank)
    m = sf.nn.Sequential(sf.nn.Linear(3, 4), sf.nn.BatchNorm1d(4))
    m[1].running_mean.fill_(float(rank))
    return m


def main(argv):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for broadcast_buffers in (True, False):
        m = _model(rank)
        src_model = _model(1)
        _sync_module_states(m, None, 2**20, 1, {"0.bias"}, broadcast_buffers=broadcast_buffers)
        assert np.array_equal(m[0].weight.numpy(), src_model[0].weight.numpy())
        assert np.array_equal(m[1].weight.numpy(), src_model[1].weight.numpy())
        assert np.array_equal(m[0].bias.numpy(), _model(rank)[0].bias.numpy())  # ignored: stays this rank's
        expected_mean = 1.0 if broadcast_buffers else float(rank)
        assert m[1].running_mean.tolist() == [expected_mean] * 4
    dist.destroy_process_group()
