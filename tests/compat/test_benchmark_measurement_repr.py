"""``torch.utils.benchmark.Measurement``'s repr, line for line as torch prints it (the
per_sample_grads and jacobians_hessians tutorials print Measurements): "Median:" and the IQR
line with its quartiles only when there are enough measurements, "1 runs , 1 thread" for a
single measurement, the multi-line setup block, and the IQR warnings."""

import re

import pytest
import torch
from torch.utils.benchmark.utils.common import Measurement as TorchMeasurement
from torch.utils.benchmark.utils.common import TaskSpec as TorchTaskSpec

from shardflow.utils.benchmark import Measurement
from shardflow.utils.benchmark.common import TaskSpec


def _body(m) -> str:
    return re.sub(r"<[\w.]+\.Measurement object at 0x[0-9a-f]+>", "<M>", repr(m))


@pytest.mark.parametrize("times, spec", [
    ([1e-3], {}),
    ([1e-3, 1.1e-3], {}),
    ([1e-3, 1.1e-3, 1.2e-3, 1.3e-3, 1.9e-3], dict(label="L", sub_label="s", description="d", setup="x=1")),
    ([1e-6] * 4, dict(setup="a=1\nb=2")),
    ([1e-3, 1e-3, 1.01e-3, 1.04e-3, 1.12e-3], dict(stmt="a\nb")),
    ([1.0, 2.0, 3.0, 9.0], dict(label="wide", number_per_run=10)),
])
def test_measurement_repr_matches_torch(times, spec):
    spec = dict(spec)
    number = spec.pop("number_per_run", 1)
    stmt, setup = spec.pop("stmt", "x + 1"), spec.pop("setup", "pass")
    ours = Measurement(number, [t * number for t in times], TaskSpec(stmt=stmt, setup=setup, **spec))
    theirs = TorchMeasurement(number, [t * number for t in times], TorchTaskSpec(stmt=stmt, setup=setup, **spec))
    assert _body(ours) == _body(theirs)


def test_timer_single_measurement_repr_wording():
    """timeit(n) gives one measurement: torch writes "1 runs , 1 thread" (no "per measurement")."""
    from shardflow.utils.benchmark import Timer

    text = repr(Timer(stmt="x + 1", globals={"x": 1}).timeit(3))
    assert text.splitlines()[-1] == "  1 measurement, 3 runs , 1 thread"
    assert repr(torch.utils.benchmark.Timer(stmt="x + 1", globals={"x": 1}).timeit(3)).splitlines()[-1] == \
        "  1 measurement, 3 runs , 1 thread"
