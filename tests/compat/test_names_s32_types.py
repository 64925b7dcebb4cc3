"""Session 32's torch names for annotations, isinstance checks and dtype tables: ``SymInt``/
``SymFloat``/``SymBool``, ``Tag``, ``Future``, ``fork``/``wait``, ``classes``, ``nested``,
the dtypes shardflow cannot hold (``complex32``, ``uint1..7``, ``int1..7``, ``bits*``,
``float8_e8m0fnu``, ``float4_e2m1fn_x2``), the ``jagged`` layout and the build flags; each
compared with torch 2.13."""

import pytest
import torch

import shardflow as sf

_STORAGELESS = ["complex32", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits1x8", "bits2x4", "bits4x2", "bits8",
                "bits16"] + [f"{u}int{k}" for u in ("u", "") for k in range(1, 8)]


def test_sym_types_are_types_nothing_is_an_instance_of():
    for name in ("SymInt", "SymFloat", "SymBool"):
        t_cls, s_cls = getattr(torch, name), getattr(sf, name)
        assert isinstance(s_cls, type)
        for value in (3, 2.5, True, sf.ones(2).shape[0]):
            assert isinstance(value, s_cls) is False is isinstance(value, t_cls)
        with pytest.raises(TypeError, match=f"no symbolic shapes.*{name}"):
            s_cls(3)
    assert int | sf.SymInt  # usable in annotations


def test_tag_enum_matches_torch():
    assert [(m.name, m.value) for m in sf.Tag] == [(n, m.value) for n, m in torch.Tag.__members__.items()]
    assert sf.Tag.pointwise is sf.Tag["pointwise"] and repr(sf.Tag.core) == repr(torch.Tag.core)


def test_future_fork_wait():
    assert sf.Future is sf.futures.Future
    fut = sf.fork(lambda a, b: a + b, sf.ones(2), b=2)
    tfut = torch.fork(lambda a, b: a + b, torch.ones(2), b=2)
    assert isinstance(fut, sf.Future) and isinstance(tfut, torch.Future)
    assert sf.wait(fut).tolist() == torch.wait(tfut).tolist() == [3.0, 3.0]
    failing = sf.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        sf.wait(failing)


def test_classes_namespace_refuses_unregistered_classes_like_torch():
    with pytest.raises(RuntimeError, match="Tried to instantiate class 'foo.Bar', but it does not exist"):
        torch.classes.foo.Bar
    with pytest.raises(RuntimeError, match="Tried to instantiate class 'foo.Bar', but it does not exist"):
        sf.classes.foo.Bar
    assert sf.classes.loaded_libraries == set() == torch.classes.loaded_libraries
    with pytest.raises(NotImplementedError, match=r"cannot load C\+\+ extension.*Python"):
        sf.classes.load_library("libfoo.so")


@pytest.mark.parametrize("name", ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "narrow",
                                  "to_padded_tensor", "masked_select"])
def test_nested_functions_exist_and_refuse(name):
    assert hasattr(torch.nested, name)
    with pytest.raises(NotImplementedError, match="no nested.*pad_sequence"):
        getattr(sf.nested, name)([sf.ones(2), sf.ones(3)])
    assert repr(sf.jagged) == "shardflow.jagged" and isinstance(sf.jagged, sf.layout)
    assert isinstance(torch.jagged, torch.layout)


@pytest.mark.parametrize("name", _STORAGELESS)
def test_storageless_dtypes_answer_like_torch_and_refuse_storage(name):
    t, s = getattr(torch, name), getattr(sf, name)
    assert isinstance(s, sf.dtype) and repr(s) == f"shardflow.{name}"
    assert (s.is_complex, s.is_floating_point, s.itemsize) == (t.is_complex, t.is_floating_point, t.itemsize)
    if name.startswith("bits"):
        with pytest.raises(RuntimeError, match="Bits types are undefined"):
            t.is_signed
        with pytest.raises(RuntimeError, match="Bits types are undefined"):
            s.is_signed
    else:
        assert s.is_signed == t.is_signed
    with pytest.raises(NotImplementedError, match=f"no storage for dtype {name}.*use .* instead"):
        sf.zeros(2, dtype=s)
    assert sf.ones(2).dtype != s


def test_dtype_aliases_and_pickling():
    import pickle
    assert sf.chalf is sf.complex32 and torch.chalf is torch.complex32
    assert sf.bit is sf.uint1 and torch.bit is torch.uint1
    assert pickle.loads(pickle.dumps(sf.uint4)) is sf.uint4
    with pytest.raises(NotImplementedError, match="use complex64 instead"):
        sf.ones(2).to(sf.complex32)


def test_build_flags():
    assert sf.has_lapack is True is torch.has_lapack and sf.has_spectral is True is torch.has_spectral
    # shardflow's answers follow its backends (torch's CPU wheel has MKL and OpenMP)
    assert sf.has_mkl is sf.backends.mkl.is_available() and sf.has_openmp is sf.backends.openmp.is_available()
    assert sf.compiled_with_cxx11_abi() is torch.compiled_with_cxx11_abi()
