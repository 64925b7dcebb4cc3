"""Shared-memory tensors across processes (issue 27, item 3): ``Tensor.share_memory_()``,
``is_shared()``, ``Module.share_memory()`` and ``shardflow.multiprocessing`` with fork, spawn
and forkserver, against PyTorch's behaviour; no segment outlives its processes."""

import copy
import gc
import importlib
import os
import pickle
import signal
import subprocess
import sys
import time
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.multiprocessing as smp
from tests import _multiprocessing_targets as targets

TIMEOUT = 60


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    previous = smp.get_sharing_strategy()
    smp.set_sharing_strategy(request.param)
    try:
        yield request.param
    finally:
        smp.set_sharing_strategy(previous)


def _segment_names(pids) -> set[str]:
    """file_system segments in /dev/shm created by any of ``pids``."""
    prefixes = tuple(f"shardflow_{pid}_" for pid in pids)
    return {n for n in os.listdir("/dev/shm") if n.startswith(prefixes)} if os.path.isdir("/dev/shm") else set()


def _descriptors() -> int:
    """file_descriptor segments this process holds open."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += "shardflow-shared-tensor" in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return count


def _finish(*processes):
    for p in processes:
        p.join(TIMEOUT)
        if p.is_alive():
            p.kill()
            p.join()
            pytest.fail(f"child {p.pid} still running after {TIMEOUT} s")
        assert p.exitcode == 0, f"child {p.pid} exited with {p.exitcode}"


def _assert_nothing_left(pids, descriptors_before):
    gc.collect()
    assert _segment_names(pids) == set()
    assert _descriptors() == descriptors_before


# ---------------------------------------------------------------- one process
def _share_facts(lib):
    t = lib.arange(6.0).reshape(2, 3)
    facts = {"fresh": t.is_shared()}
    facts["returns_self"] = t.share_memory_() is t
    v = t[1]
    t.add_(1.0)  # in place: stays in shared memory, the view sees it
    facts["after"] = (t.is_shared(), t.data.is_shared(), v.is_shared(), v.tolist(), t.tolist())
    facts["copy_is_shared"] = (t + 1).is_shared()
    u = lib.arange(6.0).reshape(2, 3).t()
    facts["strides"] = (u.share_memory_().stride(), u.tolist())
    e = lib.empty(0, 3)
    facts["empty"] = (e.share_memory_().is_shared(), tuple(e.shape))
    i = lib.arange(4)
    facts["int64"] = (i.share_memory_().is_shared(), i.tolist(), str(i.dtype).split(".")[-1])
    b = lib.tensor([1.5, -2.25]).to(lib.bfloat16)
    facts["bfloat16"] = (b.share_memory_().is_shared(), b.float().tolist())
    return facts


def test_share_memory_moves_in_place_like_torch():
    assert _share_facts(sf) == _share_facts(torch)


def _module_facts(lib):
    model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
    model(lib.ones(4, 2)).sum().backward()
    model.tied = lib.nn.Parameter(model[0].weight.data[0])  # views the weight's memory
    weight = model[0].weight
    before = [p.detach().clone() for p in model.parameters()]
    assert model.share_memory() is model and model[0].weight is weight
    values_kept = all(bool((p == q).all()) for p, q in zip(model.parameters(), before))
    with lib.no_grad():
        weight.add_(1.0)
    return {
        "parameters": [p.is_shared() for p in model.parameters()],
        "buffers": [b.is_shared() for b in model.buffers()],
        "grads": [p.grad.is_shared() for p in model.parameters() if p.grad is not None],
        "values_kept": values_kept,
        "tied": model.tied.tolist() == weight[0].tolist(),
    }


def test_module_share_memory_moves_parameters_buffers_and_grads_like_torch():
    facts = _module_facts(sf)
    assert facts == _module_facts(torch)
    assert all(facts["parameters"]) and all(facts["buffers"]) and all(facts["grads"]) and facts["tied"]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"])
def test_optimizer_steps_write_into_the_shared_memory(name):
    model = sf.nn.Linear(3, 2)
    model.share_memory()
    arrays = [p.array for p in model.parameters()]
    kwargs = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    opt = getattr(sf.optim, name)(model.parameters(), lr=0.1, **kwargs)
    before = [a.copy() for a in arrays]
    for _ in range(2):
        opt.zero_grad()
        model(sf.ones(4, 3)).pow(2).sum().backward()
        opt.step()
    assert all(p.array is a for p, a in zip(model.parameters(), arrays))
    assert all(p.is_shared() for p in model.parameters())
    assert any(not np.array_equal(a, b) for a, b in zip(arrays, before))


def test_plain_pickle_and_deepcopy_still_copy():
    t = sf.ones(3).share_memory_()
    for c in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert not c.is_shared()
        c.add_(1.0)
        assert t.tolist() == [1.0, 1.0, 1.0]


def test_views_travel_as_views_with_their_layout(strategy):
    """A view of a shared tensor (offset, strides, bfloat16) pickled by multiprocessing's
    pickler comes back as the same view of the same memory."""
    descriptors = _descriptors()
    base = sf.arange(12.0).reshape(3, 4).to(sf.bfloat16).share_memory_()
    view = base.t()[1:]  # (3, 3), strides (1, 4), offset of one element
    back = ForkingPickler.loads(ForkingPickler.dumps(view))
    assert (back.stride(), back.dtype, back.tolist()) == (view.stride(), view.dtype, view.tolist())
    assert np.shares_memory(back.array, base.array)
    back.fill_(-1.0)
    assert base.float().tolist() == [[0.0, -1.0, -1.0, -1.0], [4.0, -1.0, -1.0, -1.0], [8.0, -1.0, -1.0, -1.0]]
    del base, view, back
    _assert_nothing_left({os.getpid()}, descriptors)


def test_refusals_name_the_problem_and_change_nothing():
    graph = sf.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(graph)
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(torch.ones(2, requires_grad=True) * 2)

    from shardflow.backend import xp
    from tests.doubles import host_cupy

    previous = xp.set_cuda_array_module(host_cupy)
    try:
        model = sf.nn.Sequential(sf.nn.Linear(2, 2), sf.nn.Linear(2, 2))
        model[1].cuda()
        with pytest.raises(RuntimeError, match=r"shares CPU tensors only.*CUDA IPC"):
            model.share_memory()
        assert not any(p.is_shared() for p in model.parameters())  # checked before moving any
        with pytest.raises(RuntimeError, match="CUDA IPC"):
            ForkingPickler.dumps(model[1].weight.detach())
    finally:
        xp.set_cuda_array_module(previous)


# ---------------------------------------------------------------- across processes
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_child_in_place_update_reaches_the_parent(method):
    """The issue's program: m.share_memory(); child: with no_grad(): m.weight.add_(1.0)."""
    deltas = {}
    for lib_name in ("shardflow", "torch") if method == "fork" else ("shardflow",):
        lib = importlib.import_module(lib_name)
        ctx = lib.multiprocessing.get_context(method)
        model = lib.nn.Linear(3, 2)
        model.share_memory()
        before = model.weight.detach().clone()
        child = ctx.Process(target=targets.add_one_to_weight, args=(lib_name, model))
        child.start()
        _finish(child)
        deltas[lib_name] = (model.weight.detach() - before).numpy()
    for delta in deltas.values():  # shardflow's, and torch's where it ran
        np.testing.assert_allclose(delta, np.ones((2, 3)), rtol=0, atol=1e-6)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_queue_round_trip_shares_both_ways(method, strategy):
    descriptors = _descriptors()
    ctx = smp.get_context(method)
    inbox, outbox, report = ctx.Queue(), ctx.Queue(), ctx.Queue()
    release = ctx.Event()
    child = ctx.Process(target=targets.echo_and_make, args=(inbox, outbox, release, report))
    child.start()
    t = sf.ones(3)
    inbox.put(t)  # not shared yet: sending moves it into shared memory, in place
    back = outbox.get(timeout=TIMEOUT)
    mine = outbox.get(timeout=TIMEOUT)
    assert t.is_shared() and back.is_shared() and mine.is_shared()
    assert t.tolist() == [2.0, 2.0, 2.0]  # the child's add_ on what it received
    assert np.shares_memory(back.array, t.array)  # it came back as a view of t's memory
    back.add_(10.0)
    assert t.tolist() == [12.0, 12.0, 12.0]
    mine.fill_(7.0)  # the child's own tensor: the child sees the parent's write
    release.set()
    assert report.get(timeout=TIMEOUT) == (True, [7.0, 7.0, 7.0])
    _finish(child)
    del t, back, mine
    _assert_nothing_left({os.getpid(), child.pid}, descriptors)


def test_a_tensor_sent_back_after_its_sender_exited_is_received(strategy):
    """The child has exited before the parent unpickles the tensor it sent back; the
    parent maps that memory already, so nothing has to come from the child (torch's
    file_descriptor strategy fails here: its receiver asks the dead sender for the
    descriptor first)."""
    descriptors = _descriptors()
    ctx = smp.get_context("fork")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=targets.echo, args=(inbox, outbox))
    child.start()
    t = sf.zeros(2)
    inbox.put(t)
    _finish(child)
    back = outbox.get(timeout=TIMEOUT)
    assert np.shares_memory(back.array, t.array) and t.tolist() == [1.0, 1.0]
    del t, back
    _assert_nothing_left({os.getpid(), child.pid}, descriptors)


def test_a_sent_tensor_outlives_its_senders_reference(strategy):
    """The parent drops its tensor once the message is written, before the child reads it:
    the message keeps the memory (a file_system reference, a descriptor duplicate)."""
    descriptors = _descriptors()
    ctx = smp.get_context("fork")
    inbox, outbox, go, done = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
    child = ctx.Process(target=targets.echo, args=(inbox, outbox, go, done))
    child.start()
    inbox.put(sf.full((2,), 5.0))
    inbox.close()
    inbox.join_thread()  # the message is written and the parent holds no tensor any more
    gc.collect()
    go.set()
    back = outbox.get(timeout=TIMEOUT)  # a new mapping: the child must still be alive
    done.set()
    _finish(child)
    assert back.is_shared() and back.tolist() == [6.0, 6.0]
    del back
    _assert_nothing_left({os.getpid(), child.pid}, descriptors)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="file_system segments live in /dev/shm")
@pytest.mark.parametrize("kill", [False, True])
def test_file_system_segments_go_when_their_processes_end(kill):
    """A process that exits, or is killed with its segment still in use, leaves no name in
    /dev/shm once it has ended (killed: multiprocessing's resource tracker unlinks it)."""
    code = f"from tests._multiprocessing_targets import share_and_die; share_and_die('file_system', {kill})"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                         text=True, timeout=TIMEOUT)
    assert run.returncode == (-signal.SIGKILL if kill else 0), run.stderr
    pid = int(run.stdout.split()[0])
    deadline = time.monotonic() + 10  # the tracker notices its client's death asynchronously
    while _segment_names({pid}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _segment_names({pid}) == set()


def test_pool_tasks_and_results_share_like_torch():
    results = {}
    for lib in (sf, torch):
        tensors = [lib.ones(2), lib.full((2,), 3.0)]
        with lib.multiprocessing.get_context("fork").Pool(2) as pool:
            out = pool.map(targets.scale_in_place, tensors)
        results[lib.__name__] = ([t.tolist() for t in tensors], [o.tolist() for o in out],
                                 [o.is_shared() for o in out])
    assert results["shardflow"] == results["torch"] == ([[2.0, 2.0], [6.0, 6.0]],) * 2 + ([True, True],)


# ---------------------------------------------------------------- Hogwild
def _hogwild(lib_name, method, steps, turns):
    """PyTorch's mnist_hogwild on a toy regression: 2 processes train one shared model.
    Returns the full-data loss before and after, and the parent's final parameters."""
    lib = importlib.import_module(lib_name)
    ctx = lib.multiprocessing.get_context(method)
    model = targets.toy_model(lib)
    model.share_memory()
    x, y = targets.toy_data()
    start = targets.full_loss(lib, model, x, y)
    semaphores = [ctx.Semaphore(1), ctx.Semaphore(0)] if turns else None
    workers = [ctx.Process(target=targets.hogwild_train, args=(lib_name, rank, model, steps, 8, semaphores))
               for rank in range(2)]
    for w in workers:
        w.start()
    _finish(*workers)
    params = [p.detach().numpy().copy() for p in model.parameters()]
    return start, targets.full_loss(lib, model, x, y), params


def _sequential(lib, steps):
    """The turn-taking run in one process: step k of process 0, then of process 1, ..."""
    model = targets.toy_model(lib)
    workers = [targets.worker_step(lib, rank, model, 8) for rank in range(2)]
    for k in range(steps):
        for step in workers:
            step(k)
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_hogwild_taking_turns_matches_one_process_and_torch():
    """Two processes updating one shared model in turns give exactly what one process
    running both optimizers' steps in the same order gives, in shardflow and in torch
    (torch's program runs in one process here: its forked children spend seconds on
    torch.optim's first-step imports)."""
    start, end, params = _hogwild("shardflow", "fork", 12, turns=True)
    x, y = targets.toy_data()
    assert end < 0.5 * start  # the parent's model trained
    assert abs(start - targets.full_loss(torch, targets.toy_model(torch), x, y)) < 1e-5
    for ours, alone, theirs in zip(params, _sequential(sf, 12), _sequential(torch, 12)):
        np.testing.assert_allclose(ours, alone, rtol=1e-5, atol=1e-6)  # every update landed
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method,sharing", [("spawn", "file_descriptor"), ("fork", "file_system")])
def test_hogwild_free_running_trains_the_parents_model(method, sharing):
    previous = smp.get_sharing_strategy()
    smp.set_sharing_strategy(sharing)
    try:
        descriptors = _descriptors()
        start, end, _ = _hogwild("shardflow", method, 12, turns=False)
        _assert_nothing_left({os.getpid()}, descriptors)
    finally:
        smp.set_sharing_strategy(previous)
    model = targets.toy_model(torch)
    torch_params = _sequential(torch, 12)
    with torch.no_grad():
        for p, value in zip(model.parameters(), torch_params):
            p.copy_(torch.from_numpy(value))
    x, y = targets.toy_data()
    reference = targets.full_loss(torch, model, x, y)
    # Lock-free updates interleave differently on each run; the shared model must train
    # about as far as the 24 steps in one process do (an unshared one stays at `start`).
    assert reference < 0.5 * start
    assert end < 2 * reference + 0.05
