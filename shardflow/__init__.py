"""shardflow: a deep learning framework whose distributed training is native.

``import shardflow as torch`` is meant to work for model code: the names below follow
PyTorch (note that, as in PyTorch, ``shardflow.bool``/``float``/``int`` are dtypes here).
This module only re-exports; see docs/ARCHITECTURE.md for the layers.
"""

from . import (
    accelerator,
    amp,
    ao,
    autograd,
    backends,
    compiler,
    cpu,
    cuda,
    data,
    distributions,
    fft,
    func,
    futures,
    hub,
    linalg,
    multiprocessing,
    nn,
    onnx,
    optim,
    overrides,
    profiler,
    quasirandom,
    random,
    serialization,
    signal,
    sparse,
    special,
    testing,
    types,
    utils,
    version,
)
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_enabled
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
from .autograd import profiler as _autograd_profiler  # noqa: F401 (torch.autograd.profiler's path)
from .autograd._tensor_str import get_printoptions, set_printoptions
from .autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
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
from .backend import (
    bfloat16,
    complex64,
    complex128,
    cuda_is_available,
    device,
    dtype,
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
    sparse_coo,
    strided,
    uint8,
)
from .backend import bool_ as bool
from .backend.info import e, finfo, iinfo, inf, nan, newaxis, pi
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
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from .backends import (
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from .backends.switches import (
    get_deterministic_debug_mode,
    init_num_threads,
    is_warn_always_enabled,
    set_deterministic_debug_mode,
    set_flush_denormal,
    set_warn_always,
)
from .cuda import OutOfMemoryError
from .distributed import sbp
from .distributed.parallel_config import parallelize
from .distributed.placement import placement
from .func import vmap  # torch.vmap is torch.func.vmap
from .jit import compile, compile_step
from .kernels.threads import (
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)
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
from .quant import dequantize, qint8, qint32, quantize_per_channel, quantize_per_tensor, quint8
from .serialization import load, save

half = float16
cfloat = complex64
cdouble = complex128
float = float32
double = float64
long = int64
int = int32
short = int16



def constant_pad_nd(input, pad, value=0):
    """``torch.constant_pad_nd``: ``nn.functional.pad(input, pad, 'constant', value)``."""
    return nn.functional.pad(input, pad, "constant", value)


__version__ = version.__version__

