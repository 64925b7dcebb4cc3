"""Fixtures every test gets.

* Every test starts from the same random state, with NumPy's floating-point warnings from
  shardflow's ops filtered as a program sees them. shardflow's default generator, like
  PyTorch's, is seeded from OS entropy in each process (``backend/random.py``), so an unseeded
  program varies from run to run. Tests must not: each one starts with the default generator
  seeded with PyTorch's default seed, so a test's draws do not depend on which tests ran before
  it. Rank processes under MPI seed in their scripts. pytest imports shardflow inside a
  ``warnings.catch_warnings`` block, which drops the warning filter shardflow adds at import
  (``backend/fp_errors.py``); it is re-added before the test loop starts and by every test.
* A test that makes a placement turns the global route on (``route.enable()``: the sbp handler
  in front of every op); it is turned off when the test ends, so that no later test in the
  process runs with it (or with its warned-once fallback state). A fixture that keeps a
  placement for several tests must enable the route again in each (``route.enable()``).
* A test that leaves the default process group initialised (``init_process_group``, or a
  collective on the world of one, which initialises it on first use) has it destroyed when
  it ends, so that the next test meets PyTorch's state before ``init_process_group``.
* Process-wide switches a program may set (``torch.backends.cuda.matmul.allow_tf32 = True``
  in nanoGPT's train.py) are put back after each test, shardflow's and, when a test has
  imported it, PyTorch's: float32 matmul precision.
* Under pytest-xdist (the README's test command runs ``-n auto --dist loadgroup``), every test
  of a file that starts processes (MPI ranks, subprocesses, multiprocessing) is in one
  ``xdist_group``: those files run one test at a time on one worker, so no two rank jobs
  share the cores at once (their hang and timeout bounds were set for one job at a time),
  while the in-process tests spread over the other workers.
"""

import sys
from pathlib import Path

import pytest

import shardflow
import shardflow.distributed as dist
from shardflow.backend.fp_errors import install_warning_filter
from shardflow.distributed import route

# A test file whose source names one of these starts processes (MPI ranks, subprocesses).
# (``shardflow.testing.parity`` is not one: it rewrites a program's imports and runs it in
# this process; the 11 files it alone put in the serial group, ~70 s of CPU, now spread
# over the workers, as the other 25 parity files already did.)
_STARTS_PROCESSES = ("subprocess", "multiprocessing", "Popen", "mpiexec", "shardflow.testing.mpi",
                     "shardflow.testing import mpi")


def _starts_processes(path: Path, cache: dict) -> bool:
    if path not in cache:
        text = path.read_text(errors="replace")
        cache[path] = any(s in text for s in _STARTS_PROCESSES)
    return cache[path]


def pytest_configure(config):
    # Under xdist a mistyped path only gives "no tests ran" (the workers' "file or directory
    # not found" is not shown): say it here, as plain pytest does.
    if hasattr(config, "workerinput") or config.getoption("pyargs", False):
        return
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if not any((base / path).exists() for base in (config.invocation_params.dir, config.rootpath)):
            raise pytest.UsageError(f"file or directory not found: {arg}")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into node ids
def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):  # not an xdist worker: nothing to group
        return
    cache: dict = {}
    for item in items:
        if _starts_processes(Path(item.fspath), cache):
            item.add_marker(pytest.mark.xdist_group("processes"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    install_warning_filter()
    yield


@pytest.fixture(autouse=True)
def _seeded_default_generator():
    shardflow.manual_seed(67280421310721)
    install_warning_filter()


@pytest.fixture(autouse=True)
def _global_route_ends_with_the_test():
    yield
    route.disable()


@pytest.fixture(autouse=True)
def _process_group_ends_with_the_test():
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


@pytest.fixture(autouse=True)
def _matmul_precision_ends_with_the_test():
    yield
    shardflow.set_float32_matmul_precision("highest")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_float32_matmul_precision("highest")


@pytest.fixture(autouse=True)
def _torch_distribution_validation_ends_with_the_test():
    # torch._dynamo turns torch's default Distribution validation off, process-wide, the first
    # time it runs (torch's flex_attention tests use it): the distribution tests that compare
    # errors with torch's then found torch raising nothing, depending on which tests shared
    # the xdist worker before them
    yield
    torch = sys.modules.get("torch")
    if torch is not None and "torch.distributions" in sys.modules:
        torch.distributions.Distribution.set_default_validate_args(__debug__)
