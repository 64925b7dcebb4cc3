"""Observer statistics as a state dict, a recording observer and qconfig equality
(torch.ao.quantization's ``get_observer_state_dict``, ``load_observer_state_dict``,
``RecordingObserver``, ``default_debug_observer`` / ``default_debug_qconfig``,
``default_weight_only_qconfig`` / ``default_activation_only_qconfig``,
``qconfig_equals``, ``default_eval_fn``)."""

from __future__ import annotations

import functools
from collections import OrderedDict

from ..nn import Identity
from .fake_quantize import default_fake_quant, default_weight_fake_quant
from .observer import ObserverBase, default_weight_observer
from .qconfig import QConfig
from .qtypes import _scheme, as_qdtype, quint8

__all__ = ["get_observer_state_dict", "load_observer_state_dict", "RecordingObserver",
           "default_debug_observer", "default_debug_qconfig", "default_weight_only_qconfig",
           "default_activation_only_qconfig", "qconfig_equals", "default_eval_fn"]


def get_observer_state_dict(mod) -> OrderedDict:
    """The entries of ``mod.state_dict()`` that belong to observers (``activation_post_process``)."""
    return OrderedDict((k, v) for k, v in mod.state_dict().items() if "activation_post_process" in k)


def load_observer_state_dict(mod, obs_dict) -> None:
    """Load observer statistics saved by :func:`get_observer_state_dict` into ``mod``'s
    observers. As torch 2.13 (which loads each observer non-strictly): an entry that is
    missing leaves that statistic as it is, and an entry no observer has is skipped."""
    own = get_observer_state_dict(mod)
    mod.load_state_dict({k: obs_dict[k] for k in own if k in obs_dict}, strict=False)


class RecordingObserver(ObserverBase):
    """Records (clones of) every tensor it sees, for debugging; has no qparams."""

    def __init__(self, dtype=quint8):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for RecordingObserver")  # torch's type

    def get_tensor_value(self):
        return self.tensor_val


default_debug_observer = RecordingObserver
default_debug_qconfig = QConfig(weight=default_weight_observer, activation=default_debug_observer)
# fake-quantize only the weight / only the activation (torch's definitions)
default_weight_only_qconfig = QConfig(activation=Identity, weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=Identity)


def _normalized(keywords: dict) -> dict:
    """qscheme / dtype spelled as shardflow's objects or their names compare equal."""
    out = dict(keywords)
    for key, norm in (("qscheme", _scheme), ("dtype", as_qdtype)):
        if key in out:
            try:
                out[key] = norm(out[key])
            except (ValueError, TypeError, KeyError):
                pass  # not a quantized dtype / scheme: compared as given
    return out


def _ctr_equals(a, b) -> bool:
    if isinstance(a, functools.partial) and isinstance(b, functools.partial):
        return a.func == b.func and a.args == b.args and _normalized(a.keywords) == _normalized(b.keywords)
    return a == b


def qconfig_equals(q1, q2) -> bool:
    """Whether two qconfigs make the same observers (``with_args`` factories compared by
    class and arguments, as torch compares them)."""
    if q1 is None or q2 is None:
        return q1 == q2
    return _ctr_equals(q1.activation, q2.activation) and _ctr_equals(q1.weight, q2.weight)


def default_eval_fn(model, calib_data) -> None:
    """Run ``model`` on each ``data`` of ``(data, target)`` pairs (calibration)."""
    for data, _target in calib_data:
        model(data)
