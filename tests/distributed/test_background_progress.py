"""The background MPI progress thread (``shardflow/comm/mpi_progress.py``) on 2 and 3 ranks:
an async all_reduce completes while the main thread sleeps; the main thread's collectives
and send/recv stay correct while the thread polls; DDP holds it only during backward, with
the gradients of one process; a program that ends with it held exits normally (rank
program ``programs/background_progress.py``, with ``SHARDFLOW_PROGRESS_THREAD=1``). The
setting's parsing and its auto rule, in one process."""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [2, 3])
def test_background_progress(n):
    # "1": on 2 cores the default (auto) runs the thread only with more ranks than cores
    res = run_program("tests.distributed.programs.background_progress", n=n, timeout=120,
                      env={"SHARDFLOW_PROGRESS_THREAD": "1"}).check()
    for check in ("alone", "interleaved", "ddp", "exit_held"):
        for rank in range(n):
            assert f"PASS {check} {rank}" in res.stdout, res.output


def test_progress_thread_setting(monkeypatch):
    import os

    from shardflow import _config
    from shardflow._config import EnvironmentValueError

    monkeypatch.delenv("SHARDFLOW_PROGRESS_THREAD", raising=False)
    cores = os.cpu_count() or 1
    for local, want in ((cores, False), (cores + 1, True)):  # auto: more ranks than cores
        monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
        monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", str(local))
        monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", str(local))
        assert _config.progress_thread() is want, local
    monkeypatch.setenv("SHARDFLOW_PROGRESS_THREAD", "0")
    assert _config.progress_thread() is False
    monkeypatch.setenv("SHARDFLOW_PROGRESS_THREAD", "1")
    assert _config.progress_thread() is True
    monkeypatch.setenv("SHARDFLOW_PROGRESS_THREAD", "yes")
    with pytest.raises(EnvironmentValueError, match="must be auto, 1 or 0, got 'yes'"):
        _config.progress_thread()
