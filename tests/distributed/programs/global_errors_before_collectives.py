"""Wrong placements and layouts are refused before any collective, naming what is wrong: a
mesh that does not cover every rank, too few sbps for the mesh, a split dim smaller than the
mesh, a split of a dim the tensor lacks, an sbp given as a string, a dp x tp that is not the
world, an op on global tensors of different placements."""

import shardflow as sf
from shardflow.distributed import distribute_tensor, placement, sbp
from shardflow.distributed.tensor_parallel import data_tensor_parallel
from shardflow.models.gpt import GPT, GPTConfig

from ._common import raises

REFUSED = (ValueError, TypeError, NotImplementedError)


def main(argv):
    p = placement("cpu")
    x = distribute_tensor(sf.randn(4, 6), p, sbp.split(0))
    raises(REFUSED, lambda: placement("cpu", [0]), "cover every rank")
    raises(REFUSED, lambda: distribute_tensor(sf.randn(4), placement("cpu", [[0], [1]]), sbp.split(0)),
           "one sbp per mesh dimension")
    raises(REFUSED, lambda: distribute_tensor(sf.randn(1, 6), p, sbp.split(0)),
           "at least as large as the mesh")
    raises(REFUSED, lambda: distribute_tensor(sf.randn(4, 6), p, sbp.split(2)), "splits dim 2")
    raises(REFUSED, lambda: x.to_global(sbp="S(0)"), "sbp must be")
    gpt = GPT(GPTConfig(block_size=4, vocab_size=8, n_layer=1, n_head=2, n_embd=4))
    raises(REFUSED, lambda: data_tensor_parallel(gpt, 2, 2), "dp x tp = 2 x 2 = 4", "2 rank(s)")
    q = placement("cpu", [[0, 1]])
    y = distribute_tensor(sf.randn(4, 6), q, [sbp.broadcast, sbp.split(0)])
    raises(REFUSED, lambda: x + y, "different placements")
