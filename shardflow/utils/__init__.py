"""PyTorch's ``torch.utils`` paths: ``data``, ``checkpoint``, ``dlpack``, ``hooks``
(``RemovableHandle``), ``_pytree`` (nested containers), ``benchmark`` (``Timer``, ``Compare``),
``model_zoo`` (``load_url``, the hub's weight download), ``swap_tensors`` / ``set_module``
(``swap.py``); loaded on first use: ``flop_counter``, ``module_tracker``, ``weak``,
``collect_env``, ``cpp_extension``, ``deterministic``, ``throughput_benchmark`` (and its
``ThroughputBenchmark``, torch's ``torch.utils`` name), ``file_baton``, ``backcompat``,
``mobile_optimizer``;
``tensorboard`` is imported on request, as ``torch.utils.tensorboard`` is."""

from .._lazy import lazy_attributes as _lazy_attributes
from . import _pytree, benchmark, checkpoint, data, dlpack, hooks, model_zoo
from .swap import set_module, swap_tensors

# torch's rarer utils modules, imported on first use (``torch.utils.weak`` ... are attributes
# after ``import torch``)
__getattr__, __dir__ = _lazy_attributes(__name__, globals(), {
    "backcompat", "collect_env", "cpp_extension", "deterministic", "file_baton", "flop_counter", "mobile_optimizer",
    "module_tracker", "throughput_benchmark", "weak"},
    {"ThroughputBenchmark": ("throughput_benchmark", "ThroughputBenchmark")})
