"""``torch.futures.collect_all`` / ``wait_all`` over the futures a collective's
``Work.get_future()`` returns (nanochat's ``DistMuon`` ends its step with
``torch.futures.collect_all(all_gather_futures).wait()``): shardflow's collect_all expected
its own thread-completed Futures and raised AttributeError on them."""

import shardflow
from shardflow.distributed.algorithms.ddp_comm_hooks.future import Future as CommFuture


def test_collect_all_and_wait_all_take_collective_futures():
    ran = []

    def complete(i):
        def run():
            ran.append(i)
            return [shardflow.full((2,), float(i))]
        return run

    futures = [CommFuture(complete(i)) for i in range(3)]
    together = shardflow.futures.collect_all(futures)
    assert together.wait() == futures
    assert ran == [0, 1, 2] and all(f.done() for f in futures)
    values = shardflow.futures.wait_all([CommFuture(complete(5)), CommFuture.completed([shardflow.ones(1)])])
    assert [v[0].tolist() for v in values] == [[5.0, 5.0], [1.0]]


def test_collect_all_mixes_both_kinds():
    own = shardflow.futures.Future()
    own.set_result(7)
    comm = CommFuture(lambda: [shardflow.zeros(1)])
    assert shardflow.futures.collect_all([own, comm]).wait() == [own, comm]
