"""``spawn`` started as one MPI job (shardflow/multiprocessing/mpi_spawn.py): the children
meet with ``init_process_group(rank=i, world_size=n)`` as in PyTorch's DDP tutorial; a
failure is reported as multiprocessing children's are; arguments that must stay
``multiprocessing`` objects keep the ``multiprocessing`` path."""

import argparse
import multiprocessing

import pytest

import shardflow as sf
from shardflow.multiprocessing import mpi_spawn
from tests import _spawn_targets as t

pytestmark = pytest.mark.mpi


def test_spawned_children_form_one_process_group(tmp_path):
    assert sf.multiprocessing.spawn(t.all_reduce_ranks, args=(3, str(tmp_path)), nprocs=3) is None
    got = sorted(open(tmp_path / f"sum{i}").read() for i in range(3))
    assert got == ["0 3 6.0", "1 3 6.0", "2 3 6.0"]  # rank, world size, 1 + 2 + 3


def test_a_raising_child_is_reported_with_its_index_and_traceback():
    with pytest.raises(sf.multiprocessing.ProcessRaisedException,
                       match=r"(?s)Process 1 terminated with the following error.*ValueError: rank one refuses") as e:
        sf.multiprocessing.spawn(t.fail_on_one, nprocs=2)
    assert e.value.error_index == 1


def test_an_exiting_child_is_reported_with_the_exit_status():
    with pytest.raises(sf.multiprocessing.ProcessExitedException, match="exit code 3") as e:
        sf.multiprocessing.spawn(t.exit_with_code, nprocs=2)
    assert e.value.exit_code == 3


def test_a_child_calling_sys_exit_is_named_with_its_code_as_torch_does():
    with pytest.raises(sf.multiprocessing.ProcessExitedException,
                       match="^process 1 terminated with exit code 4$") as e:
        sf.multiprocessing.spawn(t.sys_exit_on_one, nprocs=2)
    assert (e.value.error_index, e.value.exit_code) == (1, 4)


def test_only_plain_arguments_take_the_mpi_path():
    plain = (2, "x", None, [1.0, (b"a",)], {"k": 1}, argparse.Namespace(lr=0.1, name="a"))
    assert mpi_spawn.can_launch(plain, 2, True, "spawn")
    assert not mpi_spawn.can_launch((sf.ones(2),), 2, True, "spawn")            # shared memory
    assert not mpi_spawn.can_launch((multiprocessing.get_context("spawn").Queue(),), 2, True, "spawn")
    assert not mpi_spawn.can_launch((), 1, True, "spawn")                        # one process
    assert not mpi_spawn.can_launch((), 2, False, "spawn")                       # join=False: contexts
    assert not mpi_spawn.can_launch((), 2, True, "fork")                         # fork shares memory


def test_inside_an_mpi_job_spawn_keeps_multiprocessing_children(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert not mpi_spawn.can_launch((), 2, True, "spawn")
