"""``torch.utils.benchmark`` path: ``Timer`` (``timeit``, ``blocked_autorange``,
``adaptive_autorange``), ``Measurement`` (median, mean, IQR of per-run times) and ``Compare``
(a table of measurements grouped by label). Python statements only (torch's C++ ``Language``
and Callgrind counters are not built)."""

from .common import Measurement, TaskSpec, select_unit, trim_sigfig, unit_to_english
from .compare import Colorize, Compare
from .timer import Language, Timer

__all__ = ["Timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize", "select_unit", "trim_sigfig",
           "unit_to_english"]
