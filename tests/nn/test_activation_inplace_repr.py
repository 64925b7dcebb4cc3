"""``print(model)`` of the activation modules that take ``inplace`` equals torch's, for both
values: torch's Hardswish/Hardsigmoid print no arguments (MobileNetV3 builds
``nn.Hardswish(inplace=True)``), CELU and Threshold print ``inplace=True`` after their own."""

import inspect

import pytest
import torch

import shardflow

ARGS = {"Threshold": (0.1, 2.0), "Hardtanh": (-2.0, 2.0), "ELU": (0.5,), "CELU": (0.5,),
        "LeakyReLU": (0.2,), "RReLU": (0.1, 0.3), "Dropout": (0.3,), "Dropout1d": (0.3,),
        "Dropout2d": (0.3,), "Dropout3d": (0.3,), "AlphaDropout": (0.3,),
        "FeatureAlphaDropout": (0.3,)}
NAMES = sorted(n for n in dir(torch.nn) if inspect.isclass(getattr(torch.nn, n))
               and issubclass(getattr(torch.nn, n), torch.nn.Module)
               and "inplace" in inspect.signature(getattr(torch.nn, n).__init__).parameters)


def test_every_inplace_module_is_covered():
    assert {"Hardswish", "Hardsigmoid", "CELU", "Threshold", "ReLU", "SELU"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("inplace", [True, False])
def test_repr_as_torch(name, inplace):
    args = ARGS.get(name, ())
    expected = repr(getattr(torch.nn, name)(*args, inplace=inplace))
    assert repr(getattr(shardflow.nn, name)(*args, inplace=inplace)) == expected
