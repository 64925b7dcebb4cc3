"""dropout2d/dropout3d's rank warnings point at the line that called them, as torch's (a
2-D input to ``nn.Dropout2d`` warns from the module's forward, ``F.dropout2d(x)`` from the
caller's line); they pointed into shardflow's op dispatcher (seen in the RPC parameter
server example, whose Dropout2d gets (N, C) input)."""

import warnings

import pytest
import torch

import shardflow as sf


def _where(fn):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fn()
    (w,) = [w for w in got if "Received a" in str(w.message)]
    return w.filename, w.lineno


@pytest.mark.parametrize("name,shape", [("dropout2d", (4, 3)), ("dropout2d", (2, 3, 4)),
                                        ("dropout3d", (2, 3))])
def test_functional_call_is_the_location(name, shape):
    for lib in (sf, torch):
        x = lib.ones(*shape)
        f = getattr(lib.nn.functional, name)
        filename, _ = _where(lambda: f(x, 0.5, True))
        assert filename == __file__, (lib, filename)


def test_module_forward_is_the_location():
    import inspect

    for lib in (sf, torch):
        filename, _ = _where(lambda: lib.nn.Dropout2d(0.5)(lib.ones(4, 3)))
        assert filename == inspect.getsourcefile(type(lib.nn.Dropout2d(0.5))), (lib, filename)
