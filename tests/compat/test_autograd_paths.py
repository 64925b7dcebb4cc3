"""``torch.autograd`` paths: ``Variable``, ``gradcheck``/``gradgradcheck`` (torch's signatures,
return values and errors), the legacy ``autograd.profiler``, ``autograd.graph.Node``."""

import inspect
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.autograd.function import Function


def test_variable_returns_a_tensor_like_torch():
    from shardflow.autograd import Variable
    from shardflow.autograd.variable import Variable as V2

    assert V2 is Variable is sf.autograd.Variable
    for lib in (torch, sf):
        a = lib.ones(2)
        v = lib.autograd.Variable(a, requires_grad=True)
        assert type(v) is lib.Tensor and v is not a and v.requires_grad and not a.requires_grad and v.is_leaf
        assert isinstance(a, lib.autograd.Variable) and not isinstance([1.0], lib.autograd.Variable)
        assert not lib.autograd.Variable(a).requires_grad
        v.data[0] = 7.0  # shares a's data, as torch's
        assert a.tolist() == [7.0, 1.0]
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            lib.autograd.Variable([1, 2])
    x = sf.autograd.Variable(sf.tensor([1.0, 2.0]), requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_gradcheck_signature_is_torchs():
    for name in ("gradcheck", "gradgradcheck"):
        t_params = list(inspect.signature(getattr(torch.autograd, name)).parameters)
        s_params = list(inspect.signature(getattr(sf.autograd, name)).parameters)
        assert s_params == t_params, name
        for p in ("eps", "atol", "rtol", "raise_exception"):
            assert (inspect.signature(getattr(sf.autograd, name)).parameters[p].default
                    == inspect.signature(getattr(torch.autograd, name)).parameters[p].default)


def _inputs(lib, dtype):
    rng = np.random.default_rng(0)
    return (lib.tensor(rng.standard_normal((3, 2)), dtype=dtype, requires_grad=True),
            lib.tensor(rng.standard_normal((2, 4)), dtype=dtype, requires_grad=True))


def test_gradcheck_passes_on_correct_ops_like_torch():
    f = lambda a, b: ((a @ b).tanh(), (a * 2).sum())  # noqa: E731  (two outputs)
    assert torch.autograd.gradcheck(f, _inputs(torch, torch.float64)) is True
    assert sf.autograd.gradcheck(f, _inputs(sf, sf.float64)) is True
    # a tensor as `inputs` (not a tuple), an input that needs no grad
    assert sf.autograd.gradcheck(lambda a: a.sigmoid(), sf.randn(4, dtype=sf.float64, requires_grad=True))
    a, b = _inputs(sf, sf.float64)
    assert sf.autograd.gradcheck(lambda x, y: x @ y, (a, b.detach()))


class ThreeTimes(Function):
    """y = 2x with a backward of 3g: a wrong gradient gradcheck must catch."""

    def forward(self, a):
        return a * 2

    def backward(self, g):
        return g * 3


class TorchThreeTimes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_gradcheck_catches_a_wrong_backward_like_torch():
    t_x, s_x = _inputs(torch, torch.float64)[0], _inputs(sf, sf.float64)[0]
    assert torch.autograd.gradcheck(TorchThreeTimes.apply, (t_x,), raise_exception=False) is False
    assert sf.autograd.gradcheck(ThreeTimes.apply, (s_x,), raise_exception=False) is False
    from torch.autograd.gradcheck import GradcheckError as TError

    from shardflow.autograd.gradcheck import GradcheckError

    assert issubclass(GradcheckError, RuntimeError) and issubclass(TError, RuntimeError)
    msg = "Jacobian mismatch for output 0 with respect to input 0"
    with pytest.raises(TError, match=msg):
        torch.autograd.gradcheck(TorchThreeTimes.apply, (t_x,))
    with pytest.raises(GradcheckError, match=msg + r",\nnumerical:\[\[2\. (?s:.*)\nanalytical:\[\[3\. "):
        sf.autograd.gradcheck(ThreeTimes.apply, (s_x,))


def test_gradcheck_bad_input_errors_like_torch():
    for lib in (torch, sf):
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(2, dtype=lib.float64),))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(2, requires_grad=True),), raise_exception=False)
        assert any("Input #0 requires gradient and is not a double precision" in str(x.message) for x in w), lib
    with pytest.raises(NotImplementedError, match="check_batched_grad=True is not supported"):
        sf.autograd.gradcheck(lambda a: a * 2, (sf.ones(2, dtype=sf.float64, requires_grad=True),),
                              check_batched_grad=True)


class ThreeTimesGraph(ThreeTimes):
    """ThreeTimes with a backward_graph (the same wrong 3g): its second derivative runs."""

    def backward_graph(self, g):
        return g * 3


def test_gradgradcheck():
    """Second derivatives through create_graph=True (autograd/higher_order.py)."""
    f = lambda a, b: (a @ b).tanh()  # noqa: E731
    assert torch.autograd.gradgradcheck(f, _inputs(torch, torch.float64))
    assert sf.autograd.gradgradcheck(f, _inputs(sf, sf.float64)) is True
    # the wrong first derivative makes the vjp map's own Jacobian wrong too
    assert sf.autograd.gradgradcheck(lambda a: ThreeTimesGraph.apply(a) * a, (_inputs(sf, sf.float64)[0],),
                                     raise_exception=False) is False
    # an op without backward_graph: its second derivative raises, naming it
    with pytest.raises(RuntimeError, match="second derivative of ThreeTimes"):
        sf.autograd.gradgradcheck(lambda a: ThreeTimes.apply(a) * a, (_inputs(sf, sf.float64)[0],),
                                  raise_exception=False)


def test_legacy_autograd_profiler_records_ops():
    from shardflow.autograd.profiler import profile, record_function

    assert record_function is sf.profiler.record_function
    assert list(inspect.signature(profile).parameters)[0] == "enabled"
    x = sf.ones(3, requires_grad=True)
    with sf.autograd.profiler.profile() as prof:
        with sf.autograd.profiler.record_function("my_block"):
            y = (x * 2).sum()
        y.backward()
    names = {e.name for e in prof.function_events}
    assert {"my_block", "aten::mul", "aten::sum"} <= names
    table = prof.table(sort_by="self_cpu_time_total")
    assert "my_block" in table and "Self CPU" in table
    assert prof.self_cpu_time_total > 0 and {e.key for e in prof.key_averages()} >= {"aten::mul", "aten::sum"}
    with sf.autograd.profiler.profile(enabled=False) as off:
        (x * 3).sum()
    assert len(off.function_events) == 0
    with sf.autograd.profiler.emit_nvtx(), sf.autograd.profiler.emit_itt():
        assert (x * 2).sum().item() == 6.0


def test_graph_node_is_the_grad_fn_type():
    from shardflow.autograd.graph import Node

    for lib in (torch, sf):
        x = lib.ones(2, requires_grad=True)
        y = (x * 2).sum()
        assert isinstance(y.grad_fn, lib.autograd.graph.Node)
        assert not isinstance(x, lib.autograd.graph.Node) and x.grad_fn is None
    assert isinstance(y.grad_fn.name(), str) and issubclass(ThreeTimes, Node)
