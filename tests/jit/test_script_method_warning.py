"""``torch.jit.script_method`` warns (DeprecationWarning) at every decoration in torch 2.13,
from torch's own module: hidden under Python's default filters, one per method under
``-W always``. shardflow gave none (RWKV_in_150_lines, tests/parity/test_public_programs_more_aj.py)."""

import warnings

import torch

import shardflow


def _decorate(lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class M(lib.jit.ScriptModule):
            @lib.jit.script_method
            def f(self, x):
                return x

            @lib.jit.script_method
            def g(self, x):
                return x + 1

        assert M().g(lib.ones(1)).item() == 2.0
    return caught


def test_script_method_warns_once_per_method_like_torch():
    th, sf = _decorate(torch), _decorate(shardflow)
    assert [w.category for w in sf] == [w.category for w in th] == [DeprecationWarning] * 2
    assert all(str(w.message).startswith("`shardflow.jit.script_method` is deprecated.") for w in sf)
    assert all(str(w.message).startswith("`torch.jit.script_method` is deprecated.") for w in th)


def test_script_method_warning_hidden_by_default_filters():
    """Attributed to the library's module, not the caller: the default DeprecationWarning
    filter (shown only for ``__main__``) hides it."""
    assert all(not w.filename.endswith("test_script_method_warning.py") for w in _decorate(shardflow))
