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
