"""``local_map`` runs a per-shard function on global tensors (output laid out as declared,
gradient through it), refuses inputs of another layout unless ``redistribute_inputs=True``,
and then redistributes them."""

import numpy as np

import shardflow as sf
from shardflow.distributed import local_map, placement, sbp

from ._common import raises, spread


def main(argv):
    p = placement("cpu")
    full = sf.tensor(np.arange(12, dtype=np.float32).reshape(6, 2), requires_grad=True)
    x = spread(full, p, sbp.split(0))
    # a per-shard function (row-wise, so shards compute independently), output split like x
    double_rows = local_map(lambda t: t * 2 + t.sum(1, keepdim=True), (sbp.split(0),),
                            ((sbp.split(0),),))
    y = double_rows(x)
    assert y.sbp == (sbp.split(0),) and tuple(y.shape) == (6, 2)
    ref = full.detach() * 2 + full.detach().sum(1, keepdim=True)
    assert np.allclose(y.numpy(), ref.numpy())
    y.sum().backward()
    assert np.allclose(full.grad.numpy(), 4.0), full.grad
    raises(ValueError, lambda: local_map(lambda t: t, (sbp.broadcast,), ((sbp.broadcast,),))(x),
           "redistribute_inputs=True")
    z = local_map(lambda t: t, (sbp.broadcast,), ((sbp.broadcast,),), redistribute_inputs=True)(x)
    assert np.allclose(z.numpy(), full.detach().numpy())
