"""Distributed autograd: gradients that flow back across RPC calls (PyTorch's FAST mode).

Recording (forward). Inside ``with context() as context_id`` every RPC message this thread
sends carries the context id and a message id (``outgoing``), and so does the reply to it
and every nested call the remote function makes (the receiving thread runs in the same
context). When the message carries tensors that require grad:

* the sender records a *send function* in its context: ``sends[message_id]`` = those
  tensors (the graph edges the gradients will enter);
* the receiver creates a ``RecvRpcBackward`` node (``Function.apply_source``): the tensors
  it hands to the function are that node's outputs, so the local graph built on them ends
  at the node; the node knows the sender and the message id.

Backward (FAST mode). ``backward(context_id, roots)`` runs the local engine from the roots
(seeds of one). When it reaches a ``RecvRpcBackward`` node, the node's backward sends the
gradients of its outputs to the sender as a ``bwd`` RPC instead of going further. The
sender's handler runs its own local pass from ``sends[message_id]`` with those gradients
(which may reach its own receive nodes and send further), and answers once every RPC its
pass sent was answered; so the root's ``backward`` returns when the whole distributed graph
has been traversed. A worker that receives gradients for several send functions runs one
pass per message (no cross-worker dependency counting: the FAST-mode assumption that this
gives the same sums, true for the programs PyTorch documents).

Gradients go into the context, not into ``.grad``: during a local pass each leaf's ``.grad``
is set aside, the engine accumulates into it as usual (so leaf hooks, and DDP's
post-accumulate-grad hooks with their all-reduce, run exactly as in a local backward), and
afterwards the result is added to the context's gradient for that leaf and ``.grad`` is
restored. One local pass runs at a time in a process (``GRAD_LOCK``; a pass never waits
on another worker while holding it, except inside collectives such as DDP's), and
``DistributedOptimizer``'s step, which sets ``.grad`` from a context, holds the same lock:
otherwise one trainer's step could set a shared parameter's ``.grad`` in the middle of
another trainer's pass, which would then accumulate into it. Passes keep
the graph (``retain_graph`` is accepted; the graph is freed when the context is released).

Release. Leaving ``context()`` drops the context here and sends ``release`` to every worker
it exchanged messages with; each of them drops its copy and tells the workers it knows in
turn (PyTorch's cleanup).
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from ...autograd.engine import run_backward
from ...autograd.function import Function
from ...autograd.tensor import Tensor, _wrap

__all__ = ["context", "backward", "get_gradients", "DistAutogradContext", "is_available"]

_local = threading.local()
GRAD_LOCK = threading.Lock()


class DistAutogradContext:
    """One context's state on one worker (PyTorch's ``DistAutogradContext``)."""

    def __init__(self, context_id: int):
        self.context_id = context_id
        self.lock = threading.Lock()
        self.grads: dict = {}      # leaf Tensor -> accumulated gradient array
        self.sends: dict = {}      # message id -> tensors sent (their gradients come back)
        self.recvs: dict = {}      # message id -> RecvRpcBackward node
        self.known_workers: set = set()

    def _context_id(self) -> int:
        return self.context_id

    def _send_functions(self) -> dict:
        return dict(self.sends)

    def _recv_functions(self) -> dict:
        return dict(self.recvs)

    def _known_worker_ids(self) -> set:
        return set(self.known_workers)

    def accumulate(self, leaf, g) -> None:
        prev = self.grads.get(leaf)
        if prev is None:
            self.grads[leaf] = g.copy() if g.base is not None or not g.flags.writeable else g
        else:
            prev += g


class RecvRpcBackward(Function):
    """The node at which gradients leave this process: its backward sends them to the
    worker the forward tensors came from (``src``, ``context_id``, ``message_id``)."""

    def backward(self, *grads):
        fut = _container().agent.send_backward(self.src, self.context_id, self.message_id, grads)
        futures = getattr(_local, "pass_futures", None)
        if futures is not None:
            futures.append(fut)
        return ()


class _Container:
    """Every context this worker knows, and the agent that sends for them."""

    def __init__(self, agent, worker_id: int):
        self.agent = agent
        self.worker_id = worker_id
        self.contexts: dict = {}
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self._msg_ids = itertools.count(1)

    def new_context(self) -> DistAutogradContext:
        cid = (self.worker_id << 48) + next(self._ids)
        ctx = DistAutogradContext(cid)
        with self.lock:
            self.contexts[cid] = ctx
        return ctx

    def get(self, cid: int) -> DistAutogradContext:
        ctx = self.contexts.get(cid)
        if ctx is None:
            raise RuntimeError(
                f"Could not find autograd context with id: {cid}. It was released (its "
                "`with dist_autograd.context()` block ended) or never existed on this worker; "
                "call backward / get_gradients / optimizer.step inside the block")
        return ctx

    def get_or_create(self, cid: int) -> DistAutogradContext:
        with self.lock:
            ctx = self.contexts.get(cid)
            if ctx is None:
                ctx = self.contexts[cid] = DistAutogradContext(cid)
            return ctx

    def release(self, cid: int, notify_except=None) -> None:
        with self.lock:
            ctx = self.contexts.pop(cid, None)
        if ctx is None:
            return
        for w in ctx.known_workers:
            if w != notify_except and w != self.worker_id:
                self.agent.send_release(w, cid)

    def new_message_id(self) -> int:
        return (self.worker_id << 48) + next(self._msg_ids)


_STATE: dict = {"container": None}


def _install(agent, worker_id: int) -> None:
    _STATE["container"] = _Container(agent, worker_id)


def _uninstall() -> None:
    _STATE["container"] = None


def _container() -> _Container:
    c = _STATE["container"]
    if c is None:
        raise RuntimeError(
            "distributed autograd needs RPC: call shardflow.distributed.rpc.init_rpc(...) first")
    return c


def is_available() -> bool:
    return True


# ------------------------------------------------------------------------ thread context


def current_context_id() -> int | None:
    return getattr(_local, "context_id", None)


class _ThreadContext:
    """Make ``cid`` the current context of this thread for a block (RPC handlers)."""

    __slots__ = ("cid", "prev")

    def __init__(self, cid):
        self.cid = cid

    def __enter__(self):
        self.prev = getattr(_local, "context_id", None)
        _local.context_id = self.cid

    def __exit__(self, *exc):
        _local.context_id = self.prev
        return False


class context:
    """``with dist_autograd.context() as context_id:``: a fresh context, current for this
    thread inside the block and released (here and on every worker it reached) after it."""

    def __enter__(self) -> int:
        if getattr(_local, "context_id", None) is not None:
            raise RuntimeError(
                "Already have an autograd context id for this thread: distributed autograd "
                "contexts do not nest; finish the outer `with dist_autograd.context()` first")
        self._ctx = _container().new_context()
        _local.context_id = self._ctx.context_id
        return self._ctx.context_id

    def __exit__(self, *exc):
        _local.context_id = None
        c = _STATE["container"]
        if c is not None:
            c.release(self._ctx.context_id)
        return False


# ------------------------------------------------------------------------ recording


def outgoing(tensors, dst: int):
    """Called by the agent for a message to ``dst``: ``[context_id, message_id]`` when this
    thread is in a context (the send function is recorded for ``tensors`` that require
    grad), else None."""
    cid = getattr(_local, "context_id", None)
    if cid is None:
        return None
    c = _container()
    ctx = c.get(cid)
    mid = c.new_message_id()
    with ctx.lock:
        ctx.known_workers.add(dst)
        if tensors:
            ctx.sends[mid] = list(tensors)
    return [cid, mid]


def reply_outgoing(cid: int, tensors, dst: int):
    """The same for a reply sent in context ``cid`` (by the handler of a message that
    carried it)."""
    c = _container()
    ctx = c.get_or_create(cid)
    mid = c.new_message_id()
    with ctx.lock:
        ctx.known_workers.add(dst)
        if tensors:
            ctx.sends[mid] = list(tensors)
    return [cid, mid]


def incoming(ag, src: int):
    """For a received message carrying ``ag = [context_id, message_id]``: the context id
    and the function that turns its tensors requiring grad into outputs of a new
    ``RecvRpcBackward`` node."""
    cid, mid = int(ag[0]), int(ag[1])
    ctx = _container().get_or_create(cid)
    with ctx.lock:
        ctx.known_workers.add(src)

    def source(arrays):
        outs = RecvRpcBackward.apply_source(arrays, src=src, context_id=cid, message_id=mid)
        with ctx.lock:
            ctx.recvs[mid] = outs[0].grad_fn
        return outs
    return cid, source


# ------------------------------------------------------------------------ backward


def _leaves(roots) -> list:
    """Every leaf tensor that requires grad and is reachable from ``roots``."""
    leaves, seen = {}, set()
    stack = []
    for t in roots:
        if t.grad_fn is None:
            if t.requires_grad:
                leaves[id(t)] = t
        else:
            stack.append(t.grad_fn)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for edge in fn.next:
            if edge is None:
                continue
            node = edge[0]
            if isinstance(node, Function):
                stack.append(node)
            else:
                leaves[id(node)] = node
    return list(leaves.values())


def local_pass(ctx: DistAutogradContext, roots, seeds) -> list:
    """One local engine pass from ``roots`` (seeded with ``seeds``), gradients of leaves into
    ``ctx``; returns the futures of the gradients it sent to other workers."""
    pairs = [(t, g) for t, g in zip(roots, seeds) if g is not None and t.requires_grad]
    if not pairs:
        return []
    roots, seeds = [p[0] for p in pairs], [p[1] for p in pairs]
    leaves = _leaves(roots)
    futures: list = []
    with GRAD_LOCK:
        saved = [(leaf, leaf.grad) for leaf in leaves]
        for leaf in leaves:
            leaf.grad = None
        prev_futures = getattr(_local, "pass_futures", None)
        _local.pass_futures = futures
        try:
            with _ThreadContext(ctx.context_id):
                run_backward(roots, seeds, True)
        finally:
            _local.pass_futures = prev_futures
            with ctx.lock:
                for leaf, old in saved:
                    g = leaf.grad
                    leaf.grad = old
                    if g is not None:
                        ctx.accumulate(leaf, g.array)
    return futures


def run_send_function(cid: int, mid: int, grads) -> list:
    """The ``bwd`` handler's work: a local pass from the send function ``mid`` of context
    ``cid`` with the gradients that came back for it."""
    ctx = _container().get(cid)
    tensors = ctx.sends.get(mid)
    if tensors is None:
        raise RuntimeError(f"autograd context {cid} has no send function for message {mid}")
    if len(grads) != len(tensors):
        raise RuntimeError(f"message {mid}: {len(grads)} gradients for {len(tensors)} tensors")
    seeds = [None if g is None else (g.array if isinstance(g, Tensor) else g) for g in grads]
    return local_pass(ctx, tensors, seeds)


def backward(context_id: int, roots, retain_graph: bool = False) -> None:
    """Run distributed backward from ``roots`` (scalars) in context ``context_id``: returns
    once every worker the graph reaches has run its part; gradients are in the contexts
    (``get_gradients``), ``.grad`` is untouched."""
    from ...futures import wait_all

    ctx = _container().get(context_id)
    roots = [roots] if isinstance(roots, Tensor) else list(roots)
    seeds = []
    for r in roots:
        if not isinstance(r, Tensor):
            raise TypeError(f"dist_autograd.backward roots must be Tensors, got {type(r).__name__}")
        if r.array.size != 1:
            raise RuntimeError(
                f"dist_autograd.backward: roots must be scalars, got a tensor of shape "
                f"{tuple(r.shape)}; reduce it first (loss.sum())")
        if not r.requires_grad:
            raise RuntimeError(
                "dist_autograd.backward: a root does not require grad and has no grad_fn; was "
                "it computed under no_grad(), or from tensors that do not require grad?")
        seeds.append(np.ones_like(r.array))
    wait_all(local_pass(ctx, roots, seeds))


def _get_debug_info() -> dict:
    """Counts for tests and debugging (PyTorch's helper of the same name)."""
    c = _STATE["container"]
    return {"num_autograd_contexts": 0 if c is None else len(c.contexts)}


def get_gradients(context_id: int) -> dict:
    """``{tensor: gradient}`` accumulated on this worker in context ``context_id``."""
    ctx = _container().get(context_id)
    with ctx.lock:
        return {leaf: _wrap(g) for leaf, g in ctx.grads.items()}
