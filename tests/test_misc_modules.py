"""Small torch modules programs touch: ``torch.compiler``, ``torch.types``, ``torch.overrides``,
``torch.cuda`` / ``torch.cpu`` streams and events, profiler extras and small nn/testing/utils
names, each against torch 2.13 (CPU). Window functions and ``SobolEngine`` are in
``test_misc_modules_signal.py``."""

import inspect

import numpy as np
import pytest
import torch

import shardflow as sf


# ---------------------------------------------------------------- torch.compiler
def test_compiler_names_and_signatures_match_torch():
    for name in ("allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin", "disable",
                 "is_compiling", "is_dynamo_compiling", "is_exporting", "reset", "set_stance",
                 "substitute_in_graph", "list_backends", "wrap_numpy"):
        t_params = list(inspect.signature(getattr(torch.compiler, name)).parameters)
        s_params = list(inspect.signature(getattr(sf.compiler, name)).parameters)
        assert s_params == t_params, name
    assert sf.compiler.compile is sf.compile
    assert sf.compiler.is_exporting() is False is torch.compiler.is_exporting()
    assert "inductor" in sf.compiler.list_backends()


def test_is_compiling_is_true_only_while_compile_traces():
    seen = []

    def f(x):
        seen.append((sf.compiler.is_compiling(), sf.compiler.is_dynamo_compiling()))
        return x * 2

    g = sf.compile(f)
    x = sf.ones(3)
    np.testing.assert_array_equal(g(x).numpy(), [2.0, 2.0, 2.0])
    g(x)  # the replay does not run f's Python body
    assert seen == [(True, True)]
    assert sf.compiler.is_compiling() is False is torch.compiler.is_compiling()
    f(x)
    assert seen[-1] == (False, False)


def test_compiler_markers_return_the_function():
    def f(x):
        return x + 1

    for name in ("allow_in_graph", "assume_constant_result", "disable"):
        assert getattr(sf.compiler, name)(f) is f
    with sf.compiler.disable():  # no function: a decorator that is also a context manager
        pass
    assert sf.compiler.disable()(f) is f
    assert sf.compiler.substitute_in_graph(len)(f) is f
    with pytest.raises(TypeError, match="expected a function"):
        sf.compiler.allow_in_graph(3)
    sf.compiler.reset()
    sf.compiler.cudagraph_mark_step_begin()


def test_set_stance_checks_arguments_and_restores():
    assert sf.compiler.current_stance() == "default"
    with sf.compiler.set_stance("force_eager"):
        assert sf.compiler.current_stance() == "force_eager"
    assert sf.compiler.current_stance() == "default"

    @sf.compiler.set_stance("eager_on_recompile")
    def f():
        return sf.compiler.current_stance()

    assert sf.compiler.current_stance() == "default"
    assert f() == "eager_on_recompile"
    sf.compiler.set_stance("fail_on_recompile")
    assert sf.compiler.current_stance() == "fail_on_recompile"
    sf.compiler.set_stance()
    assert sf.compiler.current_stance() == "default"
    # torch's message (not called here: it imports torch._dynamo, 2 s)
    with pytest.raises(RuntimeError, match="non-default stance cannot have force_backend set"):
        sf.compiler.set_stance("force_eager", force_backend="eager")
    with pytest.raises(ValueError, match="unknown stance 'bogus'"):
        sf.compiler.set_stance("bogus")
    assert sf.compiler.current_stance() == "default"


# ---------------------------------------------------------------- torch.types
def test_types_aliases_name_shardflow_classes():
    import typing

    assert typing.get_args(sf.types.Number) == typing.get_args(torch.types.Number) == (int, float, bool)
    assert sf.types._Number == torch.types._Number
    assert set(typing.get_args(sf.types.Device)) == {sf.device, str, int, type(None)}
    assert sf.types._dtype is sf.dtype and sf.types._device is sf.device and sf.types._layout is sf.layout
    assert sf.types.Size is sf.Size and sf.types.Tensor is sf.Tensor
    assert isinstance(sf.ones(2), typing.get_args(sf.types._TensorOrTensors)[0])
    for name in ("_int", "_float", "_bool", "_complex", "_str", "_bytes"):
        assert getattr(sf.types, name) is getattr(torch.types, name)
    assert not isinstance(3, sf.types.py_sym_types)


# ---------------------------------------------------------------- torch.overrides
def _protocol_cases(lib):
    """The __torch_function__ protocol as a library function runs it, on torch or shardflow."""
    o = lib.overrides
    calls = []

    class Base:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            # torch's Tensor defines a default __torch_function__ and is listed in `types`;
            # shardflow's Tensor defines none (docs/COMPAT.md): compare the other types
            calls.append((cls.__name__, [t.__name__ for t in types if t.__name__ != "Tensor"]))
            return NotImplemented if cls is Base else "handled by " + cls.__name__

    class Sub(Base):
        pass

    class Refuses:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    def my_op(*xs):
        if o.has_torch_function(xs):
            return o.handle_torch_function(my_op, xs, *xs)
        return "plain"

    t = lib.ones(2)
    out = [my_op(t), my_op(t, Base(), Sub()), list(calls),
           o.has_torch_function_unary(t), o.has_torch_function_variadic(t, Sub()),
           o.is_tensor_like(t), o.is_tensor_like(Sub()), o.is_tensor_like(3)]
    with pytest.raises(TypeError, match="no implementation found for '.*my_op' on types that implement "
                                        "__torch_function__"):
        my_op(Refuses())
    return out


def test_overrides_protocol_matches_torch():
    assert _protocol_cases(sf) == _protocol_cases(torch)
    got = _protocol_cases(sf)
    assert got[1] == "handled by Sub" and got[2] == [("Sub", ["Sub", "Base"])]  # subclass asked first


def test_overrides_function_tables():
    o = sf.overrides
    ignored = o.get_ignored_functions()
    assert sf.zeros in ignored and sf.tensor in ignored and sf.add not in ignored
    table = o.get_overridable_functions()
    assert sf.add in table[sf] and sf.nn.functional.relu in table[sf.nn.functional]
    assert sf.Tensor.add in table[sf.Tensor] and sf.zeros not in table[sf]
    testing = o.get_testing_overrides()
    assert testing[sf.add](1, 2, alpha=3) == -1 == torch.overrides.get_testing_overrides()[torch.add](
        torch.ones(1), torch.ones(1))
    assert o.is_tensor_method_or_property(sf.Tensor.add) and not o.is_tensor_method_or_property(sf.add)
    assert o.resolve_name(sf.add) == "shardflow.add" and o.resolve_name(sf.Tensor.add) == "shardflow.Tensor.add"


def test_torch_function_mode_refuses_on_enter():
    class Mode(sf.overrides.TorchFunctionMode):
        pass

    with pytest.raises(NotImplementedError, match="does not run __torch_function__ modes"):
        with Mode():
            pass


# ---------------------------------------------------------------- torch.cuda streams, events, memory
pytest_no_cuda = pytest.mark.skipif(sf.cuda.is_available() or torch.cuda.is_available(),
                                    reason="the host-stream answers are those of a machine without CUDA")


@pytest_no_cuda
def test_cuda_host_event_times_work_between_records():
    import time

    start, end = sf.cuda.Event(enable_timing=True), sf.cuda.Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert 15.0 <= start.elapsed_time(end) < 1000.0
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        start.elapsed_time(sf.cuda.Event(enable_timing=True))
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        sf.cuda.Event().elapsed_time(end)
    assert list(inspect.signature(sf.cuda.Event).parameters) == ["enable_timing", "blocking", "interprocess",
                                                                  "external"]


@pytest_no_cuda
def test_cuda_host_streams_select_and_restore():
    default = sf.cuda.default_stream()
    assert sf.cuda.current_stream() == default
    s = sf.cuda.Stream()
    assert s != default and s.query() and s.device == sf.device("cpu")
    with sf.cuda.stream(s):
        assert sf.cuda.current_stream() == s
        with sf.cuda.stream(None):  # torch's: None selects nothing
            assert sf.cuda.current_stream() == s
    assert sf.cuda.current_stream() == default
    s.wait_stream(default)
    assert isinstance(s.record_event(), sf.cuda.Event)
    s.synchronize()
    with pytest.raises(AssertionError, match="needs a CUDA device"):
        sf.cuda.ExternalStream(1234)


class _FakeCupyStream:
    def __init__(self, non_blocking=False, ptr=7):
        self.ptr, self.done, self.waited, self.synced = ptr, True, [], 0

    def use(self):
        _FakeCupy.current = self

    def wait_event(self, event):
        self.waited.append(event)

    def synchronize(self):
        self.synced += 1


class _FakeCupyEvent:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.disable_timing, self.stream, self.done = disable_timing, None, False

    def record(self, stream=None):
        self.stream, self.done = stream, True

    def synchronize(self):
        pass


class _FakeCupy:
    """Just the ``cupy.cuda`` stream and event calls ``cuda/streams.py`` makes."""
    current = None

    class cuda:
        Event = _FakeCupyEvent

        class Stream(_FakeCupyStream):
            null = _FakeCupyStream(ptr=0)

        class runtime:
            @staticmethod
            def getDevice():
                return 0

        @staticmethod
        def get_current_stream():
            return _FakeCupy.current

        @staticmethod
        def get_elapsed_time(start, end):
            return 2.5


def test_cuda_streams_and_events_drive_cupy(monkeypatch):
    from shardflow.cuda import streams

    monkeypatch.setattr(streams, "_cp", lambda: _FakeCupy)
    monkeypatch.setattr(streams, "cupy", lambda: _FakeCupy)
    _FakeCupy.current = _FakeCupy.cuda.Stream.null
    s = sf.cuda.Stream()
    assert s.cuda_stream == 7 and s.device == sf.device("cuda", 0)
    assert sf.cuda.current_stream() == sf.cuda.default_stream() != s
    with sf.cuda.stream(s):
        assert _FakeCupy.current is s._cupy and sf.cuda.current_stream() == s
        start, end = sf.cuda.Event(enable_timing=True), sf.cuda.Event(enable_timing=True)
        start.record()
        end.record(s)
    assert _FakeCupy.current is _FakeCupy.cuda.Stream.null
    assert start._cupy.stream is s._cupy and start.elapsed_time(end) == 2.5
    fresh = sf.cuda.Event()
    assert fresh._cupy.disable_timing is True and fresh.query() is False  # CuPy's answer
    fresh.record()
    assert fresh.query() is True
    other = sf.cuda.Stream()
    other.wait_stream(s)  # an event recorded on s, waited on by other
    assert other._cupy.waited and other._cupy.waited[0].stream is s._cupy


@pytest_no_cuda
def test_cuda_names_answer_like_a_cpu_build():
    assert sf.cuda.memory_stats() == torch.cuda.memory_stats() == {}
    assert sf.cuda.get_arch_list() == torch.cuda.get_arch_list() == []
    assert sf.cuda.get_gencode_flags() == torch.cuda.get_gencode_flags() == ""
    assert sf.cuda.is_tf32_supported() is torch.cuda.is_tf32_supported() is False
    assert sf.cuda.has_half is torch.cuda.has_half is True
    assert sf.cuda.is_current_stream_capturing() is False
    assert issubclass(sf.cuda.OutOfMemoryError, RuntimeError) and sf.OutOfMemoryError is sf.cuda.OutOfMemoryError
    for lib in (torch, sf):
        with pytest.warns(FutureWarning, match="renamed to `torch.cuda.memory_reserved`"):
            assert lib.cuda.memory_cached() == 0
    with sf.cuda.device_of(sf.ones(1)):
        pass
    for call in (sf.cuda.CUDAGraph, lambda: sf.cuda.graph(None), sf.cuda.graph_pool_handle, sf.cuda.init,
                 sf.cuda.memory_snapshot, lambda: sf.cuda.set_per_process_memory_fraction(0.5)):
        with pytest.raises(AssertionError, match="needs a CUDA device"):  # torch: AssertionError/RuntimeError
            call()
    f = lambda x: x  # noqa: E731
    assert sf.cuda.make_graphed_callables(f, (sf.ones(1),)) is f


def test_cuda_sync_debug_mode():
    try:
        for mode, code in (("warn", 1), ("error", 2), (0, 0), ("default", 0)):
            sf.cuda.set_sync_debug_mode(mode)
            assert sf.cuda.get_sync_debug_mode() == code
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            sf.cuda.set_sync_debug_mode("loud")
    finally:
        sf.cuda.set_sync_debug_mode(0)


def test_cuda_graphs_refused_with_cuda(monkeypatch):
    from shardflow import cuda

    monkeypatch.setattr(cuda, "cuda_is_available", lambda: True)
    monkeypatch.setattr(cuda, "cupy", lambda: _FakeCupy)
    with pytest.raises(NotImplementedError, match="does not capture CUDA graphs.*shardflow.compile"):
        sf.cuda.CUDAGraph()


# ---------------------------------------------------------------- torch.cpu
def test_cpu_streams_and_names_match_torch():
    for lib in (torch, sf):
        s = lib.cpu.Stream()
        assert lib.cpu.current_stream() is not s
        with lib.cpu.stream(s):
            assert lib.cpu.current_stream() is s
        assert lib.cpu.current_stream() is not s
        e = lib.cpu.Event()
        e.record()
        assert e.query() is True and e.synchronize() is None and e.wait() is None
        assert lib.cpu.is_initialized() is True and lib.cpu.set_device("cpu") is None
    ours, theirs = dict(sf.cpu.get_capabilities()), dict(torch.cpu.get_capabilities())
    assert ours["architecture"] == theirs["architecture"]
    assert {k: v for k, v in ours.items() if k in theirs} == {k: theirs[k] for k in ours if k in theirs}


# ---------------------------------------------------------------- torch.profiler extras
def test_tensorboard_trace_handler_writes_one_trace_per_window(tmp_path):
    import gzip
    import json

    for use_gzip in (False, True):
        out = tmp_path / f"gz{use_gzip}"
        handler = sf.profiler.tensorboard_trace_handler(str(out), worker_name="w0", use_gzip=use_gzip)
        sched = sf.profiler.schedule(wait=0, warmup=0, active=1, repeat=2)
        with sf.profiler.profile(schedule=sched, on_trace_ready=handler) as prof:
            for _ in range(3):
                (sf.ones(4) * 2).sum()
                prof.step()
        files = sorted(p.name for p in out.iterdir())
        suffix = ".pt.trace.json.gz" if use_gzip else ".pt.trace.json"
        assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(suffix) for f in files), files
        raw = (gzip.open if use_gzip else open)(out / files[0], "rb").read()
        names = {e["name"] for e in json.loads(raw)["traceEvents"]}
        assert "aten::mul" in names and "aten::sum" in names
    params = list(inspect.signature(sf.profiler.tensorboard_trace_handler).parameters)
    assert params == list(inspect.signature(torch.profiler.tensorboard_trace_handler).parameters)


def test_profiler_module_helpers():
    if not sf.cuda.is_available():
        assert sf.profiler.supported_activities() == {sf.profiler.ProfilerActivity.CPU}
        assert {a.name for a in torch.profiler.supported_activities()} == {"CPU"}
    assert sf.profiler.kineto_available() is False
    with pytest.raises(NotImplementedError, match="export_chrome_trace"):
        sf.profiler.ExecutionTraceObserver()


# ---------------------------------------------------------------- testing, utils, nn.init, nn.modules
def test_assert_allclose_deprecated_form_matches_torch():
    cases = [([1.0, 2.0], [1.0, 2.00005], {}), ([1.0, 2.0], [1.0, 2.01], {}),
             ([1.0, float("nan")], [1.0, float("nan")], {}), ([1.0, 2.0], [1.0, 2.01], {"rtol": 0.1, "atol": 0}),
             ([1, 2], [1, 3], {})]
    for actual, expected, kw in cases:
        results = []
        for lib in (torch, sf):
            with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
                try:
                    lib.testing.assert_allclose(lib.tensor(actual), expected, **kw)
                    results.append("ok")
                except AssertionError as err:
                    results.append(str(err).split("\n")[0])
        assert results[0] == results[1], (actual, expected, results)


def test_swap_tensors_and_set_module():
    for lib in (torch, sf):
        a, b = lib.nn.Parameter(lib.ones(2)), lib.zeros(3)
        a.tag = "was a"
        ida = id(a)
        lib.utils.swap_tensors(a, b)
        assert id(a) == ida and type(a) is lib.Tensor and type(b) is lib.nn.Parameter
        assert a.tolist() == [0.0, 0.0, 0.0] and b.tolist() == [1.0, 1.0] and b.requires_grad and b.tag == "was a"
        assert not hasattr(a, "tag")
    import weakref

    a, b = sf.ones(1), sf.ones(1)
    keep = weakref.ref(a)  # noqa: F841
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
        sf.utils.swap_tensors(a, b)

    def f():
        pass

    for lib in (torch, sf):
        lib.utils.set_module(f, "mine")
        assert f.__module__ == "mine"
        with pytest.raises(TypeError, match="The mod argument should be a string"):
            lib.utils.set_module(f, 3)


def test_init_deprecated_names_warn_and_fill_like_torch():
    for name in ("eye", "dirac", "sparse", "uniform", "xavier_normal"):
        args = {"sparse": (0.5,)}.get(name, ())
        shape = (3, 3, 3) if name == "dirac" else (4, 4)
        got = []
        for lib in (torch, sf):
            lib.manual_seed(0)
            with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of "
                                                   f"`nn.init.{name}_`"):
                got.append(getattr(lib.nn.init, name)(lib.empty(*shape), *args))
        if name in ("eye", "dirac"):
            np.testing.assert_array_equal(got[1].numpy(), got[0].numpy())
        assert tuple(got[1].shape) == shape


def test_nn_modules_names():
    assert sf.nn.modules.SyncBatchNorm is sf.nn.SyncBatchNorm
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = sf.nn.Container(fc=sf.nn.Linear(2, 3))
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        t = torch.nn.Container(fc=torch.nn.Linear(2, 3))
    assert list(c.state_dict()) == list(t.state_dict()) == ["fc.weight", "fc.bias"]


# ---------------------------------------------------------------- nn.parallel primitives
def test_scatter_gather_round_trip():
    from collections import namedtuple

    P = namedtuple("P", "x y")
    x = sf.arange(10.0).reshape(5, 2)
    parts = sf.nn.parallel.scatter((x, {"k": x}, P(x, 3), "s"), [0, 1])
    assert len(parts) == 2
    np.testing.assert_array_equal(parts[0][0].numpy(), x.numpy()[:3])
    np.testing.assert_array_equal(parts[1][1]["k"].numpy(), x.numpy()[3:])
    assert parts[1][2].y == 3 and parts[0][3] == "s" and isinstance(parts[0][2], P)
    # torch's scatter needs CUDA; its split is chunk's
    assert [tuple(p[0].shape) for p in parts] == [tuple(c.shape) for c in torch.arange(10.0).reshape(5, 2).chunk(2)]
    back = sf.nn.parallel.gather([p[:2] for p in parts], "cpu")
    np.testing.assert_array_equal(back[0].numpy(), x.numpy())
    np.testing.assert_array_equal(back[1]["k"].numpy(), x.numpy())
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        v = sf.nn.parallel.gather([sf.tensor(1.0), sf.tensor(2.0)], -1)
    assert v.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="All dicts must have the same number of keys"):
        sf.nn.parallel.gather([{"a": x}, {"a": x, "b": x}], -1)


def test_replicate_parallel_apply_data_parallel_match_the_module():
    sf.manual_seed(0)
    net = sf.nn.Sequential(sf.nn.Linear(3, 4), sf.nn.BatchNorm1d(4), sf.nn.ReLU())
    x = sf.randn(6, 3)
    reps = sf.nn.parallel.replicate(net, [0, 1])
    assert len(reps) == 2 and list(reps[0].parameters()) == [] and reps[0] is not net
    chunks = sf.nn.parallel.scatter(x, [0, 1])
    outs = sf.nn.parallel.parallel_apply(reps, chunks)
    y = sf.nn.parallel.gather(outs, "cpu")
    y.sum().backward()
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    for p in net.parameters():
        p.grad = None
    want = sf.cat([net(c) for c in chunks])
    want.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    for g, p in zip(grads, net.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)
    detached = sf.nn.parallel.replicate(net, [0], detach=True)[0]
    assert not detached(x).requires_grad
    with pytest.raises(AssertionError, match="number of modules 2 is not equal to the number of inputs 1"):
        sf.nn.parallel.parallel_apply(reps, chunks[:1])
    np.testing.assert_array_equal(sf.nn.parallel.data_parallel(net, x).detach().numpy(), net(x).detach().numpy())


# ---------------------------------------------------------------- torch.sparse
def _sparse_results(lib):
    """Values and gradients of torch.sparse's functions on one uncoalesced COO matrix."""
    idx, vals = [[0, 0, 1, 2, 2, 0], [0, 2, 1, 0, 2, 0]], [1.0, 2.0, 3.0, 4.0, 5.0, 0.5]

    def make():
        v = lib.tensor(vals, requires_grad=True)
        return v, lib.sparse_coo_tensor(lib.tensor(idx), v, (3, 3))

    def dense(t):
        return (t.to_dense() if t.is_sparse else t).detach().numpy()

    out = []
    weight = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    for fn in ("softmax", "log_softmax"):
        for dim in (0, 1, -1):
            v, s = make()
            # torch 2.13's backward for a negative dim is wrong (its gradient differs from dim=1's
            # and from the dense masked softmax's): compare shardflow's dim=-1 with torch's dim=1
            r = getattr(lib.sparse, fn)(s, 1 if lib is torch and dim == -1 else dim)
            (r.coalesce().values() * weight).sum().backward()
            out += [dense(r), v.grad.numpy().copy()]
    for dim in (None, 0, 1, (0, 1)):
        v, s = make()
        r = lib.sparse.sum(s) if dim is None else lib.sparse.sum(s, dim)
        out.append(r.is_sparse)
        ((r.to_dense() if r.is_sparse else r) * lib.arange(1.0, 1.0 + r.numel()).reshape(r.shape)).sum().backward()
        out += [dense(r), v.grad.numpy().copy()]
    v, s = make()
    d = lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    r = lib.sparse.addmm(lib.ones(3, 2), s, d, beta=0.5, alpha=2.0)
    r.sum().backward()
    out += [dense(r), v.grad.numpy().copy(), d.grad.numpy().copy()]
    s3 = lib.sparse_coo_tensor(lib.tensor(idx), lib.arange(12.0).reshape(6, 2), (3, 3, 2))
    out += [dense(lib.sparse.softmax(s3, 2)), dense(lib.sparse.sum(s3, 2)), dense(lib.sparse.sum(s3, (0, 2)))]
    diags = lib.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])
    for offsets, shape in (([0, -1, 2], (4, 3)), ([0, 1], (2, 4))):
        out.append(dense(lib.sparse.spdiags(diags[: len(offsets)], lib.tensor(offsets), shape)))
    return out


def test_sparse_functions_match_torch():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's sparse-invariants notice
        want = _sparse_results(torch)
    got = _sparse_results(sf)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, bool):
            assert g == w, i
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(i))
    with pytest.raises(TypeError, match="expected a sparse COO tensor"):
        sf.sparse.softmax(sf.ones(2, 2), 0)


# ---------------------------------------------------------------- smaller names
def test_small_extras_match_torch():
    # torch.compiler's default backend (torch's setter imports torch._dynamo: only the getter here)
    assert sf.compiler.get_default_backend() == torch.compiler.get_default_backend() == "inductor"
    sf.compiler.set_default_backend("eager")
    assert sf.compiler.get_default_backend() == "eager"
    sf.compiler.set_default_backend(None)
    assert sf.compiler.get_default_backend() == "inductor"

    # overrides.wrap_torch_function / enable_reentrant_dispatch
    class Duck:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return ("duck", func.__name__)

    for lib in (torch, sf):
        @lib.overrides.wrap_torch_function(lambda a: (a,))
        def plus_one(a):
            return a + 1

        assert plus_one(1) == 2 and plus_one(Duck()) == ("duck", "plus_one")
    with sf.overrides.enable_reentrant_dispatch():  # torch's is only usable inside __torch_dispatch__
        pass

    # sparse invariants switch
    for lib in (torch, sf):
        switch = lib.sparse.check_sparse_tensor_invariants
        assert switch.is_enabled() is False
        with switch():
            assert switch.is_enabled() is True
        assert switch.is_enabled() is False
        switch.enable()
        assert switch.is_enabled() is True
        switch.disable()

    # torch.cuda constants and host statistics of a CPU build
    assert sf.cuda.has_magma is torch.cuda.has_magma
    assert sf.cuda.host_memory_stats() == torch.cuda.host_memory_stats()
    assert issubclass(sf.cuda.CudaError, RuntimeError)


def test_cuda_nvtx_ranges_nest():
    nvtx = sf.cuda.nvtx
    assert nvtx.range_push("a") == 0 and nvtx.range_push("b") == 1
    assert nvtx.range_pop() == 1 and nvtx.range_pop() == 0 and nvtx.range_pop() == -1
    with nvtx.range("step {}", 3):
        assert nvtx.range_push("inner") == 1
        nvtx.range_pop()
    nvtx.mark("m")
    nvtx.range_end(nvtx.range_start("r"))
    assert nvtx.range_pop() == -1
