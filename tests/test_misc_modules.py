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
