"""Every test starts from the same random state, with NumPy's floating-point warnings from
shardflow's ops filtered as a program sees them.

shardflow's default generator, like PyTorch's, is seeded from OS entropy in each process
(``backend/random.py``), so an unseeded program varies from run to run. Tests must not:
each one starts with the default generator (and NumPy's legacy global one) seeded with
PyTorch's default seed, as a fresh process was before per-process seeds, so a test's draws
do not depend on which tests ran before it. Rank processes under MPI seed in their scripts.

pytest imports shardflow inside a ``warnings.catch_warnings`` block, which drops the
warning filter shardflow adds at import (``backend/fp_errors.py``); it is re-added before the
test loop starts (each test's warning context starts from that list, module-scoped fixtures
included) and by every test (in case a test replaced the filters).
"""

import pytest

import shardflow
from shardflow.backend.fp_errors import install_warning_filter


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    install_warning_filter()
    yield


@pytest.fixture(autouse=True)
def _seeded_default_generator():
    shardflow.manual_seed(67280421310721)
    install_warning_filter()
