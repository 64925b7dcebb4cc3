"""Backend (layer L1): dtypes, devices and the array module (NumPy on CPU, CuPy on GPU)."""

from .device import CPU, device, get_default_device, set_default_device
from .dtypes import (
    ALL,
    as_dtype,
    bfloat16,
    bool_,
    cast,
    complex64,
    complex128,
    dtype,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float16,
    float32,
    float64,
    from_numpy_dtype,
    get_default_complex_dtype,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .fp_errors import install_warning_filter
from .layout import layout, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided
from .memory import tune_allocator
from .xp import (
    cuda_is_available,
    device_of,
    get_array_module,
    is_device_array,
    linalg_errors_raised,
    new_array,
    to_device,
    xp_for,
)

# The one process-wide effect of importing shardflow: NumPy's floating-point warnings raised
# from shardflow's own modules are ignored, as PyTorch is silent (see fp_errors.py).
install_warning_filter()
