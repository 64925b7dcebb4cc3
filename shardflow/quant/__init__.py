"""Quantization: int8 inference (dynamic and static post-training) and quantization-aware
training, with ``torch.ao.quantization``'s names (also reachable as ``shardflow.ao.quantization``
and ``shardflow.ao.nn.quantized``). See docs/QUANT.md.

| file | what |
|---|---|
| ``qtypes.py`` | ``quint8`` / ``qint8`` / ``qint32``, ``per_tensor_affine`` ... schemes |
| ``qparams.py`` | scale / zero point from a range (PyTorch's and FBGEMM's formulas), array (de)quantize |
| ``qtensor.py`` | ``QuantizedTensor``, ``quantize_per_tensor``, ``quantize_per_channel``, ``dequantize`` |
| ``observer.py`` | MinMax / MovingAverage / PerChannel observers, placeholders, defaults |
| ``histogram.py`` | ``HistogramObserver`` (L2-error search for the clipping range) |
| ``fake_quantize.py`` | ``fake_quantize_per_{tensor,channel}_affine`` (STE backward), ``FakeQuantize`` |
| ``qconfig.py`` | ``QConfig`` and the default qconfigs per engine |
| ``qconfig_mapping.py`` | ``QConfigMapping`` (FX's argument; FX itself is refused) and its defaults |
| ``stubs.py`` | ``QuantStub``, ``DeQuantStub``, ``QuantWrapper`` |
| ``int8_gemm.py`` | exact int32-accumulating int8 GEMM on float32 BLAS (numba / NumPy options) |
| ``engine.py`` | the quantized engine (x86/fbgemm/qnnpack numerics) |
| ``modules/`` | static / dynamic / QAT quantized layers, ``FloatFunctional`` / ``QFunctional`` |
| ``quantize.py`` | ``prepare``, ``convert``, ``prepare_qat``, ``quantize``, ``quantize_dynamic`` |
| ``fuse.py`` | ``fuse_modules`` (Conv2d+ReLU, Linear+ReLU, Conv2d+BatchNorm2d[+ReLU]), ``fuse_modules_qat`` |
| ``quant_type.py`` | ``QuantType`` |
| ``quantization_mappings.py`` | the default float -> quantized module tables and their lookups |
| ``observer_state.py`` | observer state dicts, ``RecordingObserver``, ``qconfig_equals`` |
| ``quantize_jit.py`` | the TorchScript workflow's names, refused |
"""

from . import modules
from .engine import get_engine, set_engine, supported_engines
from .fake_quantize import (
    FakeQuantize,
    FakeQuantizeBase,
    FusedMovingAvgObsFakeQuantize,
    default_fake_quant,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
)
from .fuse import fuse_conv_bn_eval, fuse_modules, fuse_modules_qat
from .histogram import HistogramObserver, default_histogram_observer
from .int8_gemm import get_int8_backend, int8_matmul, set_int8_backend
from .observer import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    NoopObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    default_dynamic_quant_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from .observer_state import (
    RecordingObserver,
    default_activation_only_qconfig,
    default_debug_observer,
    default_debug_qconfig,
    default_eval_fn,
    default_weight_only_qconfig,
    get_observer_state_dict,
    load_observer_state_dict,
    qconfig_equals,
)
from .qconfig import (
    QConfig,
    QConfigDynamic,
    default_dynamic_qconfig,
    default_per_channel_qconfig,
    default_qat_qconfig,
    default_qconfig,
    get_default_qat_qconfig,
    get_default_qconfig,
    per_channel_dynamic_qconfig,
)
from .qconfig_mapping import (
    QConfigMapping,
    get_default_qat_qconfig_mapping,
    get_default_qconfig_mapping,
)
from .qtensor import QuantizedTensor, dequantize, quantize_per_channel, quantize_per_tensor
from .qtypes import (
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    qint32,
    quint8,
)
from .quant_type import QuantType
from .quantization_mappings import (
    DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS,
    DEFAULT_QAT_MODULE_MAPPINGS,
    DEFAULT_STATIC_QUANT_MODULE_MAPPINGS,
    get_default_qconfig_propagation_list,
    get_dynamic_quant_module_class,
    get_static_quant_module_class,
    no_observer_set,
)
from .quantize import (
    convert,
    get_default_dynamic_quant_module_mappings,
    get_default_qat_module_mappings,
    get_default_static_quant_module_mappings,
    prepare,
    prepare_qat,
    propagate_qconfig_,
    quantize,
    quantize_dynamic,
    quantize_qat,
    swap_module,
)
from .quantize_jit import (
    convert_dynamic_jit,
    convert_jit,
    fuse_conv_bn_jit,
    prepare_dynamic_jit,
    prepare_jit,
    quantize_dynamic_jit,
    quantize_jit,
    script_qconfig,
    script_qconfig_dict,
)
from .stubs import DeQuantStub, QuantStub, QuantWrapper
