"""shardflow: a deep learning framework whose distributed training is native.

``import shardflow as torch`` is meant to work for model code: the names below follow
PyTorch (note that, as in PyTorch, ``shardflow.bool``/``float``/``int`` are dtypes here).
This module only re-exports; see docs/ARCHITECTURE.md for the layers.
"""

from importlib import import_module as _import_module

from . import (
    accelerator,
    amp,
    autograd,
    backends,
    fft,
    futures,
    linalg,
    nn,
    random,
    return_types,  # the module (torch.return_types)
    sparse,
    special,
    types,
    version,
)
from ._lazy import lazy_attributes as _lazy_attributes
from .amp import autocast, get_autocast_dtype, is_autocast_enabled
from .amp.autocast_mode import clear_autocast_cache
from .amp.state_functions import *  # torch's top-level autocast getters and setters
from .autograd import (
    Size,
    Tensor,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .autograd._tensor_str import get_printoptions, set_printoptions
from .autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from .autograd.control_flow import cond, while_loop
from .autograd.legacy_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    set_default_tensor_type,
)
from .autograd.predicates import (
    _assert,
    can_cast,
    is_complex,
    is_floating_point,
    is_nonzero,
    is_same_size,
    is_signed,
    is_tensor,
    numel,
    result_type,
    typename,
)
from .autograd.sym_types import SymBool, SymFloat, SymInt
from .autograd.symbolic import (
    sym_float,
    sym_int,
    sym_ite,
    sym_max,
    sym_min,
    sym_not,
    sym_sqrt,
    sym_sum,
)
from .autograd.tensor_compat_methods import conj_physical_, hash_tensor, slice_inverse
from .backend import (
    bfloat16,
    complex64,
    complex128,
    cuda_is_available,
    device,
    dtype,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float16,
    float32,
    float64,
    get_default_device,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    layout,
    promote_types,
    set_default_device,
    set_default_dtype,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .backend import bool_ as bool
from .backend.dtypes import (  # dtypes torch names that hold no shardflow tensor (dtypes.py)
    bits1x8,
    bits2x4,
    bits4x2,
    bits8,
    bits16,
    complex32,
    float4_e2m1fn_x2,
    float8_e8m0fnu,
    int1,
    int2,
    int3,
    int4,
    int5,
    int6,
    int7,
    uint1,
    uint2,
    uint3,
    uint4,
    uint5,
    uint6,
    uint7,
)
from .backend.info import e, finfo, iinfo, inf, nan, newaxis, pi
from .backend.layout import jagged
from .backend.memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
)
from .backend.random import (
    Generator,
    default_generator,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from .backend.storage import (  # torch's storage classes (backend/storage.py)
    BFloat16Storage,
    BoolStorage,
    ByteStorage,
    CharStorage,
    ComplexDoubleStorage,
    ComplexFloatStorage,
    DoubleStorage,
    FloatStorage,
    HalfStorage,
    IntStorage,
    LongStorage,
    ShortStorage,
    Storage,
    StorageBase,
    TypedStorage,
    UntypedStorage,
    is_storage,
)
from .backends import (
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from .backends.build_flags import (
    compiled_with_cxx11_abi,
    has_lapack,
    has_mkl,
    has_openmp,
    has_spectral,
)
from .backends.switches import (
    get_deterministic_debug_mode,
    init_num_threads,
    is_warn_always_enabled,
    set_deterministic_debug_mode,
    set_flush_denormal,
    set_warn_always,
)
from .futures import Future
from .kernels.threads import (
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)
from .nn.aten_batch_norm_stats import *  # SyncBatchNorm's building blocks (batch_norm_stats ...)
from .nn.aten_conv import *  # convolution, conv_tbc, grid_sampler*, affine_grid_generator, embedding_renorm_
from .nn.aten_losses import (  # torch's top-level losses: integer reduction codes
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    poisson_nll_loss,
    triplet_margin_loss,
)
from .nn.aten_losses import (
    ctc_loss as _aten_ctc_loss,
)
from .nn.aten_norms import *  # native_layer_norm, native_batch_norm, native_group_norm, native_dropout ...
from .nn.aten_rnn import *  # lstm, gru, rnn_tanh, rnn_relu and their *_cell
from .nn.functional import (  # torch's top-level names for these nn.functional functions
    bilinear,
    celu_,
    channel_shuffle,
    cosine_similarity,
    hardshrink,
    max_pool1d_with_indices,
    native_channel_shuffle,
    pairwise_distance,
    pdist,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    rrelu,
    rrelu_,
    threshold,
    threshold_,
)
from .ops import *
from .ops import add, clone, div, mul, neg, reciprocal, sub
from .ops._foreach import *  # torch._foreach_*: compositions of routed ops (underscore names)
from .ops.lobpcg import lobpcg  # torch.lobpcg: a function, not a Tensor method (not an op)
from .random import get_rng_state  # torch's uint8 tensor (random.py)

# torch.ctc_loss is the aten form (an integer reduction code), not F.ctc_loss, which
# ``from .ops import *`` above bound to the name
ctc_loss = _aten_ctc_loss

half = float16
cfloat = complex64
cdouble = complex128
float = float32
double = float64
long = int64
int = int32
short = int16
chalf = complex32
bit = uint1  # torch.bit is torch.uint1



_device_class = device  # get_device_module's argument is named `device`, as in torch
# torch.device types torch has a module name for (get_device_module's "is a device" check)
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                       "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def get_device_module(device=None):
    """``torch.get_device_module``: the module of a device type (``shardflow.cuda`` for
    ``'cuda:1'``; with no device, the current accelerator's, else ``shardflow.cpu``)."""
    if isinstance(device, _device_class):
        name = device.type
    elif isinstance(device, str):
        name = device.split(":")[0]
        if name not in _TORCH_DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at start of "
                               f"device string: {device}")
    elif device is None:
        current = accelerator.current_accelerator()
        name = current.type if current is not None else "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    if name not in ("cpu", "cuda"):
        raise RuntimeError(
            f"Device '{name}' does not have a corresponding module registered as 'torch.{name}'.")
    return _import_module(f"{__name__}.{name}")


def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd``: ``nn.functional.pad(input, pad, 'constant', value)``."""
    return nn.functional.pad(input, pad, "constant", value)


__version__ = version.__version__


# ---------------------------------------------------------------- lazy names (PEP 562)
# Every MPI rank pays for ``import shardflow``; these subpackages (and the names re-exported
# from them) are imported on first use instead: ``shardflow.distributions``,
# ``from shardflow import hub`` and ``import shardflow.onnx`` all still work, and dir() lists them.
_LAZY_SUBPACKAGES = frozenset({
    "_C", "_dynamo", "_inductor", "_tensor", "_utils", "ao", "checkpoint", "comm", "compiler", "cpu", "cuda", "data",
    "distributed", "distributions", "export", "func", "functional", "fx", "hub", "jit", "library", "masked", "mps",
    "multiprocessing", "onnx", "optim", "overrides", "profiler",
    "quant", "quantization", "quasirandom", "classes", "nested", "serialization", "signal", "testing", "utils", "xpu",
})
# name -> (module, attribute in it)
_LAZY_NAMES = {
    "GradScaler": ("amp.grad_scaler", "GradScaler"),
    "OutOfMemoryError": ("cuda", "OutOfMemoryError"),
    "load": ("serialization", "load"),
    "save": ("serialization", "save"),
    "storage": ("storage", None),  # torch.storage, the module (its classes are imported above)
    "vmap": ("func", "vmap"),  # torch.vmap is torch.func.vmap
    "compile": ("jit", "compile"),
    "compile_step": ("jit", "compile_step"),
    "dequantize": ("quant", "dequantize"),
    "qint8": ("quant", "qint8"),
    "qint32": ("quant", "qint32"),
    "quint8": ("quant", "quint8"),
    "quantize_per_channel": ("quant", "quantize_per_channel"),
    "quantize_per_tensor": ("quant", "quantize_per_tensor"),
    "int_repr": ("quant.tensor_functions", "int_repr"),
    "q_scale": ("quant.tensor_functions", "q_scale"),
    "q_zero_point": ("quant.tensor_functions", "q_zero_point"),
    "q_per_channel_scales": ("quant.tensor_functions", "q_per_channel_scales"),
    "q_per_channel_zero_points": ("quant.tensor_functions", "q_per_channel_zero_points"),
    "q_per_channel_axis": ("quant.tensor_functions", "q_per_channel_axis"),
    "quantize_per_tensor_dynamic": ("quant.tensor_functions", "quantize_per_tensor_dynamic"),
    "qscheme": ("quant.tensor_functions", "qscheme"),
    "per_tensor_affine": ("quant.tensor_functions", "per_tensor_affine"),
    "per_tensor_symmetric": ("quant.tensor_functions", "per_tensor_symmetric"),
    "per_channel_affine": ("quant.tensor_functions", "per_channel_affine"),
    "per_channel_symmetric": ("quant.tensor_functions", "per_channel_symmetric"),
    "per_channel_affine_float_qparams": ("quant.tensor_functions", "per_channel_affine_float_qparams"),
    "fused_moving_avg_obs_fake_quant": ("quant.tensor_functions", "fused_moving_avg_obs_fake_quant"),
    "fake_quantize_per_tensor_affine": ("quant.fake_quantize", "fake_quantize_per_tensor_affine"),
    "fake_quantize_per_channel_affine": ("quant.fake_quantize", "fake_quantize_per_channel_affine"),
    "sbp": ("distributed.sbp", None),  # None: the name is the module itself
    "placement": ("distributed.placement", "placement"),
    "parallelize": ("distributed.parallel_config", "parallelize"),
    "Tag": ("library.tags", "Tag"),
    "fork": ("jit", "fork"),  # TorchScript's fork: runs the function at once (jit/torchscript.py)
    "wait": ("jit", "wait"),
    "Stream": ("device_stream", "Stream"),
    "Event": ("device_stream", "Event"),
}


__getattr__, __dir__ = _lazy_attributes(__name__, globals(), _LAZY_SUBPACKAGES, _LAZY_NAMES)
