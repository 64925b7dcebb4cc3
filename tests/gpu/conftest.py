"""GPU tests run only where CuPy sees a CUDA device; elsewhere (CI) they skip with a reason."""

import pytest

from shardflow.backend.xp import cuda_is_available


def pytest_collection_modifyitems(config, items):
    if cuda_is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device (CuPy with an NVIDIA GPU is needed)")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
