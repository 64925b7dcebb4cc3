"""The core RPC API on 3 workers (run by test_rpc_core.py): rank 0 calls, ranks 1 and 2
serve. Prints one RESULT line per rank with what it observed."""

import json
import os
import time

import numpy as np

import shardflow as torch
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn

RESULT = {}


def add(a, b, scale=1):
    return (a + b) * scale


def boom(x):
    raise ValueError(f"boom {x}")


def slow(t):
    time.sleep(t)
    return t


def whoami():
    return rpc.get_worker_info().name


def echo(x):
    return x


class Counter:
    def __init__(self, start):
        self.n = start

    def incr(self, k=1):
        self.n += k
        return self.n


@rpc.register_class
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class Unregistered:
    pass


def make_linear(seed):
    torch.manual_seed(seed)
    return nn.Linear(3, 2)


def sum_rref(rref):
    """Runs on a worker that received an RRef: fetches the value (user -> owner)."""
    return rref.to_here().sum()


def owner_value_sum(rref):
    return rref.local_value().sum()


def nested(to, x):
    """A call made from inside a call (pool thread)."""
    return rpc.rpc_sync(to, add, args=(x, 1))


@rpc.functions.async_execution
def async_add_chain(to, x):
    # answer when the chained call to `to` answers, without holding a thread
    return rpc.rpc_async(to, add, args=(x, 1)).then(lambda fut: fut.wait() * 10)


def remote_error():
    raise KeyError("missing")


def main():
    rank = int(os.environ["RANK"])
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=int(os.environ["WORLD_SIZE"]),
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=20))
    if rank == 0:
        checks(RESULT)
    rpc.shutdown()
    RESULT["rank"] = rank
    print("RESULT " + json.dumps(RESULT), flush=True)


def checks(R):
    one = torch.ones(2, 3)
    # rpc_sync / rpc_async with tensors, kwargs, names, WorkerInfo and ranks as destinations
    R["sync"] = rpc.rpc_sync("worker1", add, args=(one, 2), kwargs={"scale": 3}).tolist()
    w2 = rpc.get_worker_info("worker2")
    R["info"] = [w2.id, w2.name, rpc.get_worker_info().name]
    R["by_info"] = rpc.rpc_sync(w2, whoami)
    R["by_rank"] = rpc.rpc_sync(1, whoami)
    fut = rpc.rpc_async("worker2", add, args=(1, 2))
    chained = fut.then(lambda f: f.value() + 100)
    R["async"] = [fut.wait(), fut.done(), chained.wait()]
    R["self"] = rpc.rpc_sync("worker0", add, args=(one, one)).tolist()
    R["torch_fn"] = rpc.rpc_sync("worker1", torch.add, args=(one, one)).tolist()
    # values: dtypes, containers, non-contiguous, requires_grad, tied tensors, registered class
    x64 = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    vals = {"f64": x64, "i64": torch.arange(4), "b": torch.tensor([True, False]),
            "bf16": torch.ones(2, dtype=torch.bfloat16), "u8": torch.arange(3, dtype=torch.uint8),
            "t": (1, 2.5, "s", None, [3, {4: 5}]), "nc": x64.t(), "np": np.arange(3.0),
            "by": b"\x00\x01", "set": {1, 2}, "cx": 1 + 2j, "sl": slice(1, None, 2),
            "dt": torch.float16, "sz": torch.Size([2, 3]), "pt": Point(1, torch.ones(1))}
    back = rpc.rpc_sync("worker1", echo, args=(vals,))
    R["dtypes"] = {k: str(back[k].dtype) for k in ("f64", "i64", "b", "bf16", "u8")}
    R["values_equal"] = bool(
        (back["f64"] == x64).all() and (back["nc"] == x64.t()).all() and back["t"] == (1, 2.5, "s", None, [3, {4: 5}])
        and (back["np"] == np.arange(3.0)).all() and back["by"] == b"\x00\x01" and back["set"] == {1, 2}
        and back["cx"] == 1 + 2j and back["sl"] == slice(1, None, 2) and back["dt"] is torch.float16
        and back["sz"] == torch.Size([2, 3]) and isinstance(back["sz"], torch.Size)
        and isinstance(back["pt"], Point) and back["pt"].x == 1 and back["pt"].y.tolist() == [1.0])
    w = torch.ones(2, requires_grad=True)
    tied = rpc.rpc_sync("worker1", echo, args=([w, w],))
    R["requires_grad"] = [tied[0].requires_grad, tied[0] is tied[1]]
    lin = rpc.rpc_sync("worker1", make_linear, args=(0,))
    torch.manual_seed(0)
    ref = nn.Linear(3, 2)
    R["module"] = [type(lin).__name__, bool((lin.weight == ref.weight).all()),
                   type(lin.weight).__name__, bool((lin(one) == ref(one)).all())]
    # refusals on the sender: lambdas, bound methods, unregistered classes
    for key, call in (("lambda", lambda: rpc.rpc_sync("worker1", lambda: 1)),
                      ("bound", lambda: rpc.rpc_sync("worker1", Counter(0).incr)),
                      ("unregistered", lambda: rpc.rpc_sync("worker1", echo, args=(Unregistered(),)))):
        try:
            call()
            R[key] = "no error"
        except TypeError as e:
            R[key] = str(e)
    # errors: the remote type, message and traceback; timeouts
    try:
        rpc.rpc_sync("worker1", boom, args=(7,))
    except ValueError as e:
        R["remote_error"] = str(e)
    try:
        rpc.rpc_sync("worker2", remote_error)
    except KeyError as e:
        R["key_error"] = str(e)
    t0 = time.monotonic()
    try:
        rpc.rpc_sync("worker1", slow, args=(3,), timeout=0.5)
        R["timeout"] = "no error"
    except rpc.RPCTimeoutError as e:
        R["timeout"] = [str(e), time.monotonic() - t0, isinstance(e, RuntimeError)]
    fut = rpc.rpc_async("worker2", slow, args=(2,), timeout=0.3)
    try:
        fut.wait()
    except RuntimeError as e:
        R["async_timeout"] = type(e).__name__
    # nested calls and async_execution
    R["nested"] = rpc.rpc_sync("worker1", nested, args=("worker2", 5))
    R["async_execution"] = rpc.rpc_sync("worker1", async_add_chain, args=("worker2", 5))
    # remote, RRef API, proxies
    rref = rpc.remote("worker1", Counter, args=(10,))
    R["rref"] = [rref.is_owner(), rref.owner().name, rref.owner_name()]
    R["rref_proxy"] = [rref.rpc_sync().incr(5), rref.rpc_async().incr().wait(),
                       rref.remote().incr(2).to_here()]
    rref._get_future().wait()   # the owner's answer to remote() (may come after the proxies')
    R["confirmed"] = rref.confirmed_by_owner()
    try:
        rref.local_value()
    except RuntimeError as e:
        R["local_value_error"] = str(e)
    t = rpc.remote("worker1", add, args=(one, one))
    R["to_here"] = t.to_here().tolist()
    R["user_to_user"] = rpc.rpc_sync("worker2", sum_rref, args=(t,)).item()   # worker2 fetches from worker1
    R["to_owner"] = rpc.rpc_sync("worker1", owner_value_sum, args=(t,)).item()  # owner gets its own RRef
    local = rpc.RRef(torch.full((2,), 3.0))
    R["local_rref"] = [local.is_owner(), local.local_value().tolist(), local.to_here().tolist(),
                       rpc.rpc_sync("worker2", sum_rref, args=(local,)).item()]
    bad = rpc.remote("worker2", boom, args=(1,))
    try:
        bad.to_here()
        R["remote_fn_error"] = "no error"
    except ValueError as e:
        R["remote_fn_error"] = str(e).splitlines()[0]
    self_rref = rpc.remote("worker0", add, args=(1, 2))
    R["remote_self"] = [self_rref.is_owner(), self_rref.to_here()]


if __name__ == "__main__":
    main()
