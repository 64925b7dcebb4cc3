"""``torch.utils.benchmark`` path: ``Timer`` (``timeit``, ``blocked_autorange``,
``adaptive_autorange``), ``Measurement`` (median, mean, IQR of per-run times) and ``Compare``
(tables of measurements grouped by label, torch's layout), ``Fuzzer`` / ``FuzzedParameter`` /
``FuzzedTensor`` / ``ParameterAlias`` (random inputs from a seed, torch's draws). Python
statements only (torch's C++ ``Language``, Callgrind counters and ``op_fuzzers`` are not
built)."""

from .common import Measurement, TaskSpec, select_unit, trim_sigfig, unit_to_english
from .compare import Colorize, Compare
from .fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from .timer import Language, Timer

__all__ = ["Timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize", "Fuzzer", "FuzzedParameter",
           "FuzzedTensor", "ParameterAlias", "select_unit", "trim_sigfig",
           "unit_to_english"]
