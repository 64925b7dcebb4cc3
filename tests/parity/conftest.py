"""Fixtures shared by the parity tests."""

import pytest
import torch


@pytest.fixture
def torch_single_thread():
    """Small programs of many tiny ops: torch's intra-op threads only add synchronisation
    on a loaded 2-core machine. Used by the public-program modules (``pytestmark``)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _restore_global_defaults():
    """A program may set process-wide defaults (the "Learning PyTorch with Examples" scripts
    call ``torch.set_default_device``, which in torch installs a global ``__torch_function__``
    mode: later tests elsewhere then ran torch's functions through it, and
    ``F.l1_loss(weight=)`` and the overrides protocol answered differently). Put both
    frameworks' default device and dtype back after each parity test."""
    import shardflow

    dtypes = torch.get_default_dtype(), shardflow.get_default_dtype()
    yield
    torch.set_default_device(None)
    shardflow.set_default_device(None)
    torch.set_default_dtype(dtypes[0])
    shardflow.set_default_dtype(dtypes[1])
