"""The ``torch.*`` names that public PyTorch example programs use besides the model code:
``accelerator``, ``cuda``, ``backends``, ``onnx``, ``multiprocessing``, the data-loading
module paths, tensor predicates and memory formats. Each answers as torch 2.13 (a CPU
build) answers on this machine without a GPU."""

import importlib
import inspect
import os
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="compares with a CPU-only machine")


# ---------------------------------------------------------------- torch.accelerator
def test_accelerator_answers_like_torch_without_a_device():
    for name in ("is_available", "device_count"):
        assert getattr(sf.accelerator, name)() == getattr(torch.accelerator, name)()
    assert sf.accelerator.current_accelerator() is None is torch.accelerator.current_accelerator()
    for name, args in [("current_device_index", ()), ("set_device_index", (0,)), ("synchronize", ()),
                       ("empty_cache", ()), ("get_device_capability", ()), ("memory_allocated", ())]:
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            getattr(torch.accelerator, name)(*args)
        with pytest.raises(RuntimeError, match="Cannot access accelerator device.*device='cpu'"):
            getattr(sf.accelerator, name)(*args)
    with sf.accelerator.device_index(None):  # None: no device switch, as in torch
        pass


def test_device_agnostic_script_pattern_runs():
    # the pattern of pytorch/examples' mnist/main.py
    acc = sf.accelerator.current_accelerator() if sf.accelerator.is_available() else sf.device("cpu")
    x = sf.ones(2, device=acc)
    assert x.device == sf.device("cpu") and not x.is_cuda and x.is_cpu


# ---------------------------------------------------------------- torch.cuda
def test_cuda_queries_match_torch_cpu_build():
    for name in ("is_available", "device_count", "is_bf16_supported", "is_initialized",
                 "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"):
        assert getattr(sf.cuda, name)() == getattr(torch.cuda, name)(), name
    for name in ("manual_seed", "manual_seed_all"):
        assert getattr(sf.cuda, name)(0) is None is getattr(torch.cuda, name)(0)
    assert sf.cuda.empty_cache() is None is torch.cuda.empty_cache()
    assert not sf.cuda_is_available()


@pytest.mark.parametrize("name", ["current_device", "synchronize", "get_device_name",
                                  "get_device_capability", "mem_get_info"])
def test_cuda_calls_that_need_a_device_raise_like_torch(name):
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        getattr(torch.cuda, name)()
    with pytest.raises(AssertionError, match=r"needs a CUDA device.*cuda.is_available\(\).*device='cpu'") as e:
        getattr(sf.cuda, name)()
    assert isinstance(e.value, RuntimeError)  # what a CUDA build of torch raises without a GPU


def test_cuda_manual_seed_leaves_the_cpu_stream_alone():
    sf.manual_seed(3)
    a = sf.rand(4)
    sf.manual_seed(3)
    sf.cuda.manual_seed_all(99)
    assert np.array_equal(sf.rand(4).numpy(), a.numpy())


# ---------------------------------------------------------------- torch.backends
def test_backends_flags_have_torch_defaults_and_can_be_set():
    for mod in ("cudnn",):
        for flag in ("enabled", "benchmark", "deterministic", "allow_tf32"):
            assert getattr(getattr(sf.backends, mod), flag) == getattr(getattr(torch.backends, mod), flag)
    assert sf.backends.cudnn.is_available() == torch.backends.cudnn.is_available()
    assert sf.backends.cudnn.version() is None is torch.backends.cudnn.version()
    assert sf.backends.mps.is_available() == torch.backends.mps.is_available()
    assert sf.backends.mps.is_built() == torch.backends.mps.is_built()
    m, mt = sf.backends.cuda.matmul, torch.backends.cuda.matmul
    for flag in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(m, flag) == getattr(mt, flag)
    saved = sf.backends.cudnn.benchmark, sf.backends.cudnn.deterministic
    try:
        sf.backends.cudnn.benchmark, sf.backends.cudnn.deterministic = True, True
        assert sf.backends.cudnn.benchmark and sf.backends.cudnn.deterministic
        with sf.backends.cudnn.flags(enabled=False):
            assert not sf.backends.cudnn.enabled and not sf.backends.cudnn.benchmark
        assert sf.backends.cudnn.enabled and sf.backends.cudnn.benchmark
    finally:
        sf.backends.cudnn.benchmark, sf.backends.cudnn.deterministic = saved


def test_matmul_tf32_flag_and_precision_are_tied_and_validated():
    try:
        assert sf.get_float32_matmul_precision() == "highest" == torch.get_float32_matmul_precision()
        sf.set_float32_matmul_precision("high")
        assert sf.backends.cuda.matmul.allow_tf32
        sf.backends.cuda.matmul.allow_tf32 = False
        assert sf.get_float32_matmul_precision() == "highest"
        with pytest.raises(AttributeError, match="Unknown attribute"):
            torch.backends.cuda.matmul.allow_tf33 = True
        with pytest.raises(AttributeError, match="Unknown attribute"):
            sf.backends.cuda.matmul.allow_tf33 = True
        with pytest.raises(RuntimeError, match="expects a bool"):
            sf.backends.cuda.matmul.allow_tf32 = "yes"
        with pytest.raises(RuntimeError, match="highest, high, medium"):
            sf.set_float32_matmul_precision("fast")
    finally:
        sf.set_float32_matmul_precision("highest")


def test_deterministic_algorithms_flag():
    assert sf.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
    try:
        sf.use_deterministic_algorithms(True, warn_only=True)
        assert sf.are_deterministic_algorithms_enabled() and sf.is_deterministic_algorithms_warn_only_enabled()
    finally:
        sf.use_deterministic_algorithms(False)


# ---------------------------------------------------------------- module paths
@pytest.mark.parametrize("path, names", [
    ("utils.data.dataloader", ["DataLoader", "default_collate", "get_worker_info"]),
    ("utils.data.distributed", ["DistributedSampler"]),
    ("utils.data.sampler", ["RandomSampler", "BatchSampler", "Sampler", "SequentialSampler"]),
    ("utils.data.dataset", ["Dataset", "TensorDataset", "Subset", "random_split"]),
    ("serialization", ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals"]),
    ("onnx", ["export", "is_in_onnx_export"]),
    ("multiprocessing", ["spawn", "Process", "Queue", "set_start_method", "get_context", "cpu_count",
                         "start_processes", "ProcessRaisedException", "get_all_sharing_strategies"]),
    ("amp", ["GradScaler", "autocast", "custom_fwd", "custom_bwd"]),
    ("cuda.amp", ["GradScaler", "autocast"]),
    ("autograd.functional", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]),
    ("fft", ["fft", "ifft", "rfft", "irfft", "fftn", "rfft2", "hfft", "ihfft", "fftfreq", "fftshift"]),
    ("linalg", ["qr", "eigh", "eigvalsh", "svd", "svdvals", "cholesky_ex", "lstsq", "pinv", "matrix_rank",
                "matrix_exp", "cond", "solve_triangular"]),
])
def test_module_paths_import_like_torch(path, names):
    mod_sf = importlib.import_module(f"shardflow.{path}")
    mod_t = importlib.import_module(f"torch.{path}")
    for n in names:
        assert hasattr(mod_t, n), n  # the name is torch's
        assert hasattr(mod_sf, n), n
    # and they are reachable as attributes from the root, as in torch
    obj = sf
    for part in path.split("."):
        obj = getattr(obj, part)
    assert obj is mod_sf


def test_distributed_sampler_from_the_torch_path_is_the_sampler():
    from shardflow.utils.data.distributed import DistributedSampler

    assert DistributedSampler is sf.data.DistributedSampler
    assert list(DistributedSampler(list(range(7)), num_replicas=2, rank=1, shuffle=False)) == \
        list(torch.utils.data.distributed.DistributedSampler(list(range(7)), 2, 1, shuffle=False))


def test_onnx_export_says_what_to_do():
    assert sf.onnx.is_in_onnx_export() is False is torch.onnx.is_in_onnx_export()
    with pytest.raises(NotImplementedError, match=r"cannot export ONNX.*state_dict.*torch\.onnx\.export"):
        sf.onnx.export(sf.nn.Linear(2, 2), (sf.ones(1, 2),), "model.onnx")


# ---------------------------------------------------------------- multiprocessing
def test_multiprocessing_reexports_the_standard_library():
    import multiprocessing as mp

    assert sf.multiprocessing.Process is mp.Process
    assert sf.multiprocessing.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    assert inspect.signature(sf.multiprocessing.spawn).parameters.keys() == \
        inspect.signature(torch.multiprocessing.spawn).parameters.keys()


def test_spawn_runs_fn_with_each_index(tmp_path):
    from tests import _spawn_targets as t

    # spawn() starts fresh interpreters (each imports shardflow: about a second); the other
    # tests use start_processes(start_method="fork"), the same code with a faster start.
    assert sf.multiprocessing.spawn(t.write_rank, args=(str(tmp_path), "r"), nprocs=2) is None
    assert sorted(os.listdir(tmp_path)) == ["r0", "r1"]


def test_start_processes_without_join_returns_the_context(tmp_path):
    from tests import _spawn_targets as t

    ctx = sf.multiprocessing.start_processes(t.write_rank, args=(str(tmp_path), "j"), nprocs=3,
                                             join=False, start_method="fork")
    assert len(ctx.pids()) == 3
    while not ctx.join(timeout=30):
        pass
    assert sorted(os.listdir(tmp_path)) == ["j0", "j1", "j2"]


def test_failing_process_is_reported_with_its_index_and_traceback():
    from tests import _spawn_targets as t

    with pytest.raises(sf.multiprocessing.ProcessRaisedException,
                       match=r"(?s)Process 1 terminated with the following error.*ValueError: rank one refuses") as e:
        sf.multiprocessing.start_processes(t.fail_on_one, nprocs=2, start_method="fork")
    assert e.value.error_index == 1
    with pytest.raises(sf.multiprocessing.ProcessExitedException, match="process 0 terminated with exit code 3"):
        sf.multiprocessing.start_processes(t.exit_with_code, nprocs=1, start_method="fork")


# ---------------------------------------------------------------- tensor predicates, memory formats
def test_tensor_kind_properties_match_torch():
    s, t = sf.ones(2), torch.ones(2)
    for name in ("is_xpu", "is_sparse", "is_mps", "is_meta", "is_quantized", "is_nested", "is_cpu", "is_cuda"):
        assert getattr(s, name) == getattr(t, name), name
    assert s.is_complex() == t.is_complex()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_is_complex_and_is_floating_point_functions(dtype):
    s, t = sf.ones(2, dtype=getattr(sf, dtype)), torch.ones(2, dtype=getattr(torch, dtype))
    assert sf.is_complex(s) == torch.is_complex(t)
    assert sf.is_floating_point(s) == torch.is_floating_point(t)
    assert sf.is_tensor(s) and not sf.is_tensor(np.ones(2))
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        torch.is_complex(1.0)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        sf.is_complex(1.0)


@pytest.mark.parametrize("fmt", ["contiguous_format", "channels_last", "preserve_format"])
def test_memory_formats_are_accepted_and_keep_values(fmt):
    a = np.arange(120.0, dtype=np.float32).reshape(2, 3, 4, 5)
    s, t = sf.tensor(a), torch.tensor(a)
    ms, mt = getattr(sf, fmt), getattr(torch, fmt)
    assert repr(ms) == repr(mt).replace("torch.", "shardflow.")
    assert isinstance(ms, sf.memory_format)
    if fmt != "preserve_format":  # torch refuses preserve_format in contiguous()
        np.testing.assert_array_equal(s.contiguous(memory_format=ms).numpy(), t.contiguous(memory_format=mt).numpy())
    np.testing.assert_array_equal(s.to(memory_format=ms).numpy(), t.to(memory_format=mt).numpy())
    np.testing.assert_array_equal(s.clone(memory_format=ms).numpy(), t.clone(memory_format=mt).numpy())


def test_is_contiguous_with_a_memory_format_describes_the_layout():
    a = np.zeros((2, 3, 4, 5), np.float32)
    nhwc = sf.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    assert sf.tensor(a).is_contiguous() and sf.tensor(a).is_contiguous(memory_format=sf.contiguous_format)
    assert not sf.tensor(a).is_contiguous(memory_format=sf.channels_last)
    assert nhwc.is_contiguous(memory_format=sf.channels_last) and not nhwc.is_contiguous()
    t = torch.tensor(a).contiguous(memory_format=torch.channels_last)
    assert t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()


def test_root_names_from_the_examples_exist():
    names = ["accelerator", "cuda", "backends", "amp", "autocast", "onnx", "multiprocessing",
             "serialization", "is_complex", "is_floating_point", "contiguous_format", "channels_last",
             "set_printoptions", "get_autocast_dtype", "is_autocast_enabled",
             "set_float32_matmul_precision", "use_deterministic_algorithms"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        missing = [n for n in names if not hasattr(sf, n) or not hasattr(torch, n)]
    assert missing == []


# ---------------------------------------------------------------- legacy tensor types, Tensor(...)
_LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
           "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]


@pytest.mark.parametrize("name", _LEGACY)
def test_legacy_tensor_types_construct_and_check_like_torch(name):
    s_type, t_type = getattr(sf, name), getattr(torch, name)
    data = [[0, 1.75, 2], [3, -4, 5]]
    s, t = s_type(data), t_type(data)
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(s.float().numpy(), t.float().numpy())
    assert tuple(s_type(2, 3).shape) == tuple(t_type(2, 3).shape) == (2, 3)
    assert tuple(s_type(sf.Size([4])).shape) == (4,) and tuple(s_type().shape) == (0,)
    np.testing.assert_array_equal(s_type(np.arange(3.0)).float().numpy(), t_type(np.arange(3.0)).float().numpy())
    assert isinstance(s, s_type) and isinstance(s, sf.Tensor) and not issubclass(s_type, sf.Tensor)
    assert (s.type(), t.type()) == (f"torch.{name}",) * 2
    others = [n for n in _LEGACY if n != name]
    assert not any(isinstance(s, getattr(sf, n)) for n in others)
    assert s_type.dtype is s.dtype and s_type.is_cuda is False
    assert not isinstance(s, getattr(sf.cuda, name)) and getattr(sf.cuda, name).is_cuda


def test_tensor_type_conversions_and_errors():
    x = sf.zeros(2, 3, dtype=sf.float64)
    assert x.type(sf.FloatTensor).dtype is sf.float32
    assert x.type("torch.IntTensor").dtype is sf.int32 and x.type(sf.int16).dtype is sf.int16
    assert isinstance(x.type(sf.LongTensor), sf.LongTensor)
    with pytest.raises(ValueError, match="invalid type: 'torch.Floaty'"):
        x.type("torch.Floaty")
    with pytest.raises(TypeError, match="expected a shardflow.int64 tensor"):
        sf.LongTensor(sf.tensor([1.5]))
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        sf.FloatTensor(2, -1)
    assert sf.nn.Linear(2, 2).type(sf.DoubleTensor).weight.dtype is sf.float64  # Module.type


def test_tensor_constructor_legacy_forms_match_torch():
    for args in [(3, 4), (3,), (sf.Size([2, 5]),), ()]:
        targs = tuple(torch.Size(a) if isinstance(a, sf.Size) else a for a in args)
        s, t = sf.Tensor(*args), torch.Tensor(*targs)
        assert tuple(s.shape) == tuple(t.shape) and s.dtype is sf.float32
    for data in ([1, 2], (2, 3), [[1, 0], [True, 5]], []):
        s, t = sf.Tensor(data), torch.Tensor(data)
        assert s.dtype is sf.float32 and tuple(s.shape) == tuple(t.shape)
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    a = np.arange(3, dtype=np.int32)  # an array becomes the default dtype, as torch's
    assert sf.Tensor(a).dtype is sf.float32 and torch.Tensor(a).dtype is torch.float32
    assert sf.tensor(3).shape == () and sf.tensor([1, 2]).dtype is sf.int64  # tensor() unchanged


def test_set_default_tensor_type():
    try:
        with pytest.warns(UserWarning, match=r"set_default_tensor_type\(\) is deprecated as of PyTorch 2.1"):
            sf.set_default_tensor_type(sf.DoubleTensor)
        assert sf.zeros(1).dtype is sf.float64 and sf.Tensor(2).dtype is sf.float64
        with pytest.warns(UserWarning):
            sf.set_default_tensor_type("torch.FloatTensor")
        assert sf.zeros(1).dtype is sf.float32
        with pytest.raises(TypeError, match="only floating-point types"), pytest.warns(UserWarning):
            sf.set_default_tensor_type(sf.LongTensor)
    finally:
        sf.set_default_dtype(sf.float32)


@pytest.mark.parametrize("factory", ["empty", "zeros", "ones", "rand", "randn"])
def test_factories_take_size_as_a_keyword(factory):
    s, t = getattr(sf, factory)(size=(2, 3)), getattr(torch, factory)(size=(2, 3))
    assert tuple(s.shape) == tuple(t.shape) == (2, 3) and s.dtype is sf.float32
    assert tuple(getattr(sf, factory)(size=[4]).shape) == (4,)
    with pytest.raises(TypeError, match="pass one"):
        getattr(sf, factory)(2, size=(2,))
    assert sf.full(size=(2,), fill_value=1.5).numpy().tolist() == [1.5, 1.5]


# ---------------------------------------------------------------- seeds, NumPy's FP warnings
def _fresh_process(code: str) -> str:
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(sf.__file__))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env, cwd=root, timeout=120).stdout


def test_unseeded_processes_draw_different_streams_like_torch():
    code = ("import shardflow as sf; s = sf.initial_seed(); x = sf.rand(3).tolist(); "
            "print(s, x, sf.Generator().initial_seed(), s == sf.initial_seed())")
    runs = [_fresh_process(code).split(" ", 1) for _ in range(2)]
    assert runs[0][0] != runs[1][0] and runs[0][1] != runs[1][1]  # seed and draws differ per process
    for _, rest in runs:
        assert rest.rstrip().endswith("67280421310721 True")  # a new Generator: torch's fixed seed
    assert torch.Generator().initial_seed() == sf.Generator().initial_seed()
    sf.manual_seed(5)
    a = sf.rand(4).numpy()
    sf.manual_seed(5)
    np.testing.assert_array_equal(sf.rand(4).numpy(), a)
    assert sf.initial_seed() == 5


_EDGE = [0.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e30, 700.0]


@pytest.mark.parametrize("fn", [
    lambda m, x: m.log(x), lambda m, x: x.log2(), lambda m, x: m.log1p(-x), lambda m, x: x.sqrt(),
    lambda m, x: x.rsqrt(), lambda m, x: 1.0 / x, lambda m, x: x / x, lambda m, x: x * m.zeros_like(x) * x,
    lambda m, x: x ** -1.5, lambda m, x: m.pow(x, 0.5), lambda m, x: x.exp(), lambda m, x: (x * 1e30).expm1(),
    lambda m, x: x.sinh() + x.cosh(), lambda m, x: x.acos() + x.asin(), lambda m, x: x.tan(),
    lambda m, x: x.reciprocal(), lambda m, x: x.sum(), lambda m, x: x.mean(), lambda m, x: x.var(),
    lambda m, x: x.softmax(0), lambda m, x: x.log_softmax(0), lambda m, x: m.logsumexp(x, 0),
    lambda m, x: m.einsum("i,i->", x, x), lambda m, x: x.norm(), lambda m, x: x.round(decimals=3),
    lambda m, x: m.nn.functional.adaptive_avg_pool1d(x.reshape(1, 1, -1), 1),
    lambda m, x: m.nn.functional.binary_cross_entropy_with_logits(x, x.sigmoid().detach()),
], ids=["log", "log2", "log1p", "sqrt", "rsqrt", "rdiv", "div", "zero_times_inf", "pow_neg", "pow_half",
        "exp", "expm1", "sinh_cosh", "acos_asin", "tan", "reciprocal", "sum", "mean", "var", "softmax",
        "log_softmax", "logsumexp", "einsum", "norm", "round", "global_avg_pool", "bce"])
def test_ops_are_silent_where_torch_is_silent(fn):
    """No NumPy RuntimeWarning (divide by zero / invalid value / overflow) from an op or its
    backward on 0, -1, inf, nan and huge values; the program's own NumPy warnings still show."""
    results = {}
    for lib in (torch, sf):
        x = lib.tensor(_EDGE, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:  # the filters as they are: no simplefilter
            y = fn(lib, x)
            y.sum().backward()
        results[lib] = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert results[torch] == []
    assert results[sf] == []
    with warnings.catch_warnings(record=True) as caught:
        np.log(np.zeros(1))  # user code: NumPy's warning is not silenced
    assert any("divide by zero" in str(w.message) for w in caught)


def test_a_script_prints_no_numpy_warning_for_ops():
    """The user's view: ``python script.py`` (the filter shardflow adds at import is in place)."""
    code = ("import numpy as np, shardflow as sf\n"
            "x = sf.tensor([0.0, -1.0, float('inf')], requires_grad=True)\n"
            "y = (x.log() + x.sqrt() + 1 / x + (x * 1e38).exp() + x * 0).sum()\n"
            "y.backward()\n"
            "np.log(np.zeros(1))  # the program's own NumPy call still warns\n")
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(sf.__file__))
    res = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                         cwd=root, env=dict(os.environ, PYTHONPATH=root), timeout=120)
    assert res.returncode == 0, res.stderr
    warned = [line for line in res.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1 and "<string>:5" in warned[0], res.stderr


# ---------------------------------------------------------------- gap list: values, info, predicates, methods
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(dtype):
    s, t = sf.finfo(getattr(sf, dtype)), torch.finfo(getattr(torch, dtype))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(s, attr) == getattr(t, attr), attr
    assert s.dtype == t.dtype and sf.finfo().dtype == torch.finfo().dtype


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(dtype):
    s, t = sf.iinfo(getattr(sf, dtype)), torch.iinfo(getattr(torch, dtype))
    assert (s.bits, s.max, s.min, s.dtype) == (t.bits, t.max, t.min, t.dtype)
    with pytest.raises(TypeError, match="iinfo"):
        sf.finfo(getattr(sf, dtype))


def test_constants_layout_threads_and_predicates_match_torch():
    assert (sf.pi, sf.e, sf.inf, sf.newaxis) == (torch.pi, torch.e, torch.inf, torch.newaxis)
    assert sf.nan != sf.nan and repr(sf.ones(1).layout) == "shardflow.strided" and sf.ones(1).layout is sf.strided
    n = sf.get_num_threads()
    assert n >= 1 and sf.get_num_interop_threads() >= 1
    sf.set_num_threads(1)
    assert sf.get_num_threads() == 1
    sf.set_num_threads(n)
    with pytest.raises(RuntimeError, match="positive"):
        sf.set_num_threads(0)
    a, b = sf.tensor([1], dtype=sf.int32), sf.tensor(2.0)
    assert str(sf.result_type(a, b)) == "shardflow.float32" and str(torch.result_type(torch.tensor([1], dtype=torch.int32),
                                                                                       torch.tensor(2.0))) == "torch.float32"
    for src, dst in [("int32", "float32"), ("float64", "float32"), ("bool", "int8"), ("int64", "bool"), ("float32", "int32")]:
        assert sf.can_cast(getattr(sf, src), getattr(sf, dst)) == torch.can_cast(getattr(torch, src), getattr(torch, dst))
    assert sf.typename(sf.ones(1)) == torch.typename(torch.ones(1)) == "torch.FloatTensor"
    assert sf.numel(sf.ones(2, 3)) == 6 and sf.ones(1).is_nonzero() and not sf.zeros(1).is_nonzero()
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        sf.ones(2).is_nonzero()
    assert sf.ones(2).is_same_size(sf.zeros(2)) and not sf.tensor([1], dtype=sf.uint8).is_signed()


def test_tensor_metadata_methods_match_torch():
    for lib in (sf, torch):
        x = lib.arange(12.0).reshape(3, 4)
        assert x[:, 1:].storage_offset() == 1 and x[1].storage_offset() == 4 and x.get_device() == -1
        assert x.is_pinned() is False and x.is_inference() is False
        assert tuple(x.H.shape) == (4, 3) and tuple(x.mH.shape) == (4, 3) and (x * 1).output_nr == 0
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            x.pin_memory()
        y = x.clone()
        y.apply_(lambda v: v * 2)
        assert y[2, 3].item() == 22.0
        y.map_(x, lambda a, b: a - b)
        assert y.sum().item() == x.sum().item()


def test_top_level_names_of_functional_functions_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 3, 3)).astype(np.float32)
    w = np.array([0.2], np.float32)
    cases = [
        lambda m, t: m.pixel_shuffle(t, 2), lambda m, t: m.pixel_unshuffle(m.pixel_shuffle(t, 2), 2),
        lambda m, t: m.channel_shuffle(t, 2), lambda m, t: m.native_channel_shuffle(t, 4),
        lambda m, t: m.hardshrink(t, 0.3), lambda m, t: m.prelu(t, m.tensor(w)), lambda m, t: m.rrelu(t),
        lambda m, t: m.threshold(t, 0.1, -1.0), lambda m, t: m.threshold_(t.clone(), 0.1, -1.0),
        lambda m, t: m.celu_(t.clone()), lambda m, t: m.constant_pad_nd(t, (1, 2), 0.5),
        lambda m, t: m.cosine_similarity(t, t.flip(0)), lambda m, t: m.pairwise_distance(t[0, 0], t[1, 0]),
        lambda m, t: m.pdist(t[0, 0]), lambda m, t: m.max_pool1d_with_indices(t[0], 2)[0],
        lambda m, t: m.bilinear(t[0, 0], t[1, 0], m.ones(2, 3, 3), m.zeros(2)),
    ]
    for f in cases:
        np.testing.assert_allclose(f(sf, sf.tensor(x)).numpy(), f(torch, torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_gap_list_is_current():
    """docs/COMPAT.md's gap list names only what torch has and shardflow lacks: building a name
    fails this test until its entry is deleted (and a name wrongly listed fails it too)."""
    import re

    root = os.path.dirname(os.path.dirname(sf.__file__))
    text = open(os.path.join(root, "docs", "COMPAT.md")).read()
    section = text[text.index("## What shardflow still lacks"):]
    section = section[section.index("Still missing:"):]
    bullets = [b for b in section.split("\nDeviation notes")[0].split("\n* ") if ": `" in b]
    names = [n for b in bullets for n in re.findall(r"`([A-Za-z_][\w.]*)`", b[b.rindex(": `"):])]
    spaces = {"nn": (torch.nn, sf.nn), "F": (torch.nn.functional, sf.nn.functional), "Tensor": (torch.Tensor, sf.Tensor)}
    listed, wrong = set(), []
    for full in names:
        prefix, _, name = full.rpartition(".")
        t_ns, s_ns = spaces.get(prefix, (torch, sf))
        listed.add(full)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            in_torch = hasattr(t_ns, name)
        in_sf = hasattr(s_ns, name) or (prefix == "Tensor" and name in sf.autograd.dispatch.OPS)
        if not in_torch or in_sf:
            wrong.append(full)
    assert len(listed) > 200  # the parse found the list (it shrinks as names are built: 253 now)
    assert wrong == [], f"gap list entries that torch lacks or shardflow now has: {wrong}"


def test_top_level_names_are_not_ops_submodules():
    """``from .ops import *`` once exported ops' submodules, so ``shardflow.sparse_coo`` was
    ``ops/sparse_coo.py`` instead of the layout (and did not pickle)."""
    import pickle
    import types

    leaked = [n for n in dir(sf) if isinstance(getattr(sf, n), types.ModuleType)
              and getattr(sf, n).__name__.startswith("shardflow.ops.")]
    assert not leaked, leaked
    for c in (sf.strided, sf.sparse_coo, sf.channels_last):
        assert pickle.loads(pickle.dumps(c)) is c
    assert repr(sf.sparse_coo) == "shardflow.sparse_coo"
