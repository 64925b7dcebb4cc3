"""faults10 (session 40): fault probes run as a user would, each next to torch 2.13
(docs/DISTRIBUTED.md, "### Session 40 (faults10)"). In-process where the behaviour is local
to one rank; the launcher's output handling is tested on its reader thread."""

import pytest

import shardflow as torch
from shardflow.distributed.pipelining import PipelineStage, ScheduleGPipe


class _RaisingStage(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        raise ValueError("NaN in stage 0's forward")


def test_pipeline_stage_forward_error_is_torchs_runtime_error_chained_to_the_cause():
    # torch wraps a stage module's exception: RuntimeError "[Stage 1] failed to run forward:"
    # with the inputs' debug info, from the original; shardflow raised the bare ValueError,
    # which a program's `except RuntimeError` around schedule.step() did not catch
    stage = PipelineStage(_RaisingStage(), 0, 1, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=lambda out, y: out.sum())
    with pytest.raises(RuntimeError) as info:
        schedule.step(torch.randn(4, 8), target=torch.randn(4, 8))
    msg = str(info.value)
    assert msg.startswith("[Stage 0] failed to run forward:\nargs: ('Tensor(shardflow.Size([2, 8]), "
                          "grad=False, dtype=shardflow.float32)',)\nkwargs: {}"), msg
    assert "micro-batch 0" in msg
    assert isinstance(info.value.__cause__, ValueError)
    assert "NaN in stage 0" in str(info.value.__cause__)


@pytest.mark.parametrize("make", [lambda t: t.empty(10**7, 10**7), lambda t: t.zeros(10**7, 10**7),
                                  lambda t: t.randn(10**7, 10**7)])
def test_a_host_allocation_too_large_is_torchs_runtime_error_and_words(make):
    # torch: RuntimeError "[enforce fail at alloc_cpu.cpp] ... DefaultCPUAllocator: can't
    # allocate memory: you tried to allocate N bytes. Error code 12 ..."; shardflow raised
    # NumPy's _ArrayMemoryError, missed by a program's `except RuntimeError` (retry smaller)
    real = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as want:
        make(real)
    with pytest.raises(RuntimeError) as got:
        make(torch)
    words = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 400000000000000 bytes."
    assert words in str(want.value) and words in str(got.value), (want.value, got.value)
    assert isinstance(got.value, MemoryError)  # still caught by `except MemoryError`
    assert "shape (10000000, 10000000) and dtype float32" in str(got.value)


def test_only_numpys_allocation_error_is_converted():
    from shardflow.backend.cpu_oom import as_torch_oom

    plain = MemoryError("from elsewhere")
    assert as_torch_oom(plain) is plain


def _torch_load_error(real, path, weights_only):
    with pytest.raises(Exception) as info:
        real.load(path, weights_only=weights_only)
    return info.value


@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_load_of_numpy_files_raises_torchs_types_and_names_numpy_load(tmp_path, weights_only):
    # torch: a .npy is an UnpicklingError, a .npz a RuntimeError (its zip reader); shardflow
    # said "truncated or not a safetensors file: the header says 379676406402707 header
    # bytes" (a ValueError) / "a zip archive without data.pkl" (a ValueError)
    import pickle

    import numpy as np

    real = pytest.importorskip("torch")
    npy, npz, pkl = tmp_path / "a.npy", tmp_path / "a.npz", tmp_path / "a.pkl"
    np.save(npy, np.ones(3))
    np.savez(npz, a=np.ones(3))
    pkl.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    assert isinstance(_torch_load_error(real, npy, weights_only), pickle.UnpicklingError)
    with pytest.raises(pickle.UnpicklingError, match=r"NumPy \.npy file \(numpy\.save\).*numpy\.load\(path\)"):
        torch.load(npy, weights_only=weights_only)
    assert isinstance(_torch_load_error(real, npz, weights_only), RuntimeError)
    with pytest.raises(RuntimeError, match=r"NumPy \.npz archive \(numpy\.savez\).*numpy\.load\(path\)"):
        torch.load(npz, weights_only=weights_only)
    if weights_only:  # torch: UnpicklingError; weights_only=False: "Invalid magic number" RuntimeError
        assert isinstance(_torch_load_error(real, pkl, True), pickle.UnpicklingError)
        with pytest.raises(pickle.UnpicklingError, match="Python pickle stream"):
            torch.load(pkl)


def test_the_launcher_drops_the_nul_byte_open_mpi_writes_after_mpi_abort():
    # every job ended by MPI_Abort (a rank's uncaught exception) printed "[rank 1] \0": grep
    # then treats the whole log as binary ("binary file matches") and shows none of its lines
    import io
    import threading

    from shardflow.cli.run import _Reader

    pipe = io.BytesIO(b"[1,1]<stderr>: ValueError: bad batch\n[1,1]<stderr>: \x00\n"
                      b"[1,0]<stdout>: a\x00b\n[1,1]<stderr>: \n")
    sink = io.StringIO()
    reader = _Reader(pipe, sink, True, {}, [], threading.Lock())
    reader.run()
    assert sink.getvalue() == "[rank 1] ValueError: bad batch\n[rank 0] a\x00b\n[rank 1] \n", sink.getvalue()


@pytest.mark.mpi
def test_mp_spawn_a_child_raises_while_the_other_waits_names_the_wait(capfd):
    # torch: ProcessRaisedException "-- Process 1 terminated with the following error:" and
    # the traceback, the others SIGTERMed; shardflow the same, and (the session 38 gap) the
    # launcher's lines: what the surviving rank waited in when the job ended
    import shardflow.multiprocessing as sf_mp
    from tests.distributed.programs import faults_s40_spawn

    with pytest.raises(sf_mp.ProcessRaisedException) as info:
        sf_mp.spawn(faults_s40_spawn.raise_while_other_waits, nprocs=2)
    msg = str(info.value)
    assert msg.startswith("\n\n-- Process 1 terminated with the following error:\n"), msg
    assert "ValueError: bad batch on rank 1" in msg, msg
    assert "rank 1 (the failing rank): exiting after the exception above" in msg, msg
    assert ("rank 0: waiting for" in msg and " in all_reduce(shape=(4,), dtype=float32, op=sum), "
            "collective #2 of the world group (2 ranks)") in msg, msg
    assert "collective #2 of the world: rank 0 waited in it, rank 1 never started it" in msg, msg
    assert info.value.error_index == 1
    # the child's own exit line (mpiexec's output): it said "its script ended or called sys.exit()"
    assert "rank 1 is exiting (its mp.spawn function raised ValueError) while rank 0 waits" in \
        capfd.readouterr().err


@pytest.mark.mpi
def test_mp_spawn_a_child_that_returns_early_is_named_not_the_rank_that_waited():
    # torch: the waiting rank's gloo "Connection closed by peer ... remote worker crashing"
    # (ProcessRaisedException of process 0). shardflow said "a process ended without raising
    # a Python exception (os._exit() or a crash)" with error_index 0, the rank that waited
    import shardflow.multiprocessing as sf_mp
    from tests.distributed.programs import faults_s40_spawn

    with pytest.raises(sf_mp.ProcessExitedException) as info:
        sf_mp.spawn(faults_s40_spawn.return_while_other_waits, nprocs=2)
    msg = str(info.value)
    assert info.value.error_index == 1 and info.value.error_pid > 0, msg
    assert msg.startswith("process 1 ended while process(es) [0] still waited for it"), msg
    assert " in all_reduce(shape=(4,), dtype=float32, op=sum), collective #2" in msg, msg


CTRL_C_IN_A_WAIT = """
import os, signal, threading, time
import shardflow as torch, shardflow.distributed as dist
from shardflow.utils.data import DataLoader
dist.init_process_group("gloo")
class CollectiveInWorker(torch.utils.data.Dataset):
    def __len__(self):
        return 4
    def __getitem__(self, i):
        t = torch.ones(2)
        dist.all_reduce(t)  # in a forked DataLoader worker: hung the worker and the rank
        return t
g = dist.new_group([0, 1])
class QueriesInWorker(torch.utils.data.Dataset):
    def __len__(self):
        return 2
    def __getitem__(self, i):  # queries still answer in a fork (datasets shard by rank)
        return torch.tensor([dist.get_rank(g), dist.get_world_size(g), dist.get_rank(), int(dist.is_initialized())])
print("WORKER QUERIES", next(iter(DataLoader(QueriesInWorker(), batch_size=1, num_workers=1))).tolist(), flush=True)
try:
    next(iter(DataLoader(CollectiveInWorker(), batch_size=2, num_workers=1)))
except RuntimeError as e:
    print("WORKER ERROR", type(e).__name__, str(e).strip().splitlines()[-1], flush=True)
dist.all_reduce(torch.ones(3))
if dist.get_rank() == 1:
    time.sleep(30)  # rank 0 waits for it
else:  # Ctrl-C reaches rank 0 while it waits (as SIGINT to one rank's terminal would)
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
dist.all_reduce(torch.ones(4))
"""


@pytest.mark.mpi
def test_a_collective_in_a_dataloader_worker_and_ctrl_c_inside_a_collective_wait(tmp_path):
    # a collective in a forked DataLoader worker hung the worker and its rank for ever (no
    # watchdog thread in the fork; torch's gloo hangs too): now a CommError naming the fork.
    # Then Ctrl-C inside a wait: the KeyboardInterrupt comes out of all_reduce's wait; the board's mark was cleared on
    # the way out, so the launcher said "rank 0 (the failing rank): in its own code, not in a
    # collective" and nothing about rank 1 never starting the all_reduce
    from shardflow.testing.mpi import launch_cli

    script = tmp_path / "prog.py"
    script.write_text(CTRL_C_IN_A_WAIT)
    res = launch_cli(["-n", "2", "--timeout", "60", str(script)], timeout=60)
    out = res.output
    assert not res.timed_out and res.returncode == 1, out
    assert "KeyboardInterrupt" in out, out
    # a sub-group's queries in a worker answer (its copy is marked "forked", not destroyed)
    assert "WORKER QUERIES [[0, 2, 0, 1]]" in out and "WORKER QUERIES [[1, 2, 1, 1]]" in out, out
    # first, the program's DataLoader worker made a collective: it raised at once (it hung)
    assert "WORKER ERROR CommError shardflow.comm.base.CommError: all_reduce in a process forked from rank 0 (pid " in out, out
    assert "DataLoader worker, or a multiprocessing child started with fork" in out, out
    assert ("rank 0 (the failing rank): waiting for" in out and " in all_reduce(shape=(4,), dtype=float32, "
            "op=sum), collective #3 of the world group (2 ranks)") in out, out  # (#1: new_group)
    assert "collective #3 of the world: rank 0 waited in it, rank 1 never started it" in out, out


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_batch_mixing_tensors_and_numbers_is_torchs_type_error(num_workers):
    # torch (num_workers=0): TypeError "expected Tensor as element 1 in argument 0, but got
    # int" from torch.stack; shardflow: AttributeError "'int' object has no attribute 'array'"
    from shardflow.utils.data import DataLoader

    real = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TorchDataLoader

    words = "expected Tensor as element 1 in argument 0, but got int"
    with pytest.raises(TypeError, match=words):
        next(iter(TorchDataLoader([real.ones(2), 3, real.ones(2), 4], batch_size=4)))
    with pytest.raises(TypeError, match=words) as info:
        next(iter(DataLoader([torch.ones(2), 3, torch.ones(2), 4], batch_size=4, num_workers=num_workers)))
    assert "sample 1 of the batch is of type int where sample 0 is a Tensor" in str(info.value)


def test_load_state_dict_keeps_torchs_text_and_names_a_wrapper_prefix():
    # a checkpoint saved from DistributedDataParallel ('module.' keys) loaded into the bare
    # model: torch's RuntimeError lists the keys and stops there; shardflow keeps that text
    # and says which prefix explains them and how to strip it
    real = pytest.importorskip("torch")
    want_model = real.nn.Linear(3, 2)
    with pytest.raises(RuntimeError) as want:
        want_model.load_state_dict({"module." + k: v for k, v in want_model.state_dict().items()})
    model = torch.nn.Linear(3, 2)
    with pytest.raises(RuntimeError) as got:
        model.load_state_dict({"module." + k: v for k, v in model.state_dict().items()})
    assert str(got.value).startswith(str(want.value)), (str(want.value), str(got.value))
    assert ("prefix 'module.'" in str(got.value)
            and "consume_prefix_in_state_dict_if_present(state_dict, 'module.')" in str(got.value))
    wrapped = torch.nn.Sequential(torch.nn.Linear(3, 2))  # the reverse: a bare checkpoint
    with pytest.raises(RuntimeError, match=r"model.get_submodule\('0'\).load_state_dict"):
        wrapped.load_state_dict(torch.nn.Linear(3, 2).state_dict())
    with pytest.raises(RuntimeError) as other:  # keys no prefix explains: torch's text alone
        model.load_state_dict({"w": torch.ones(2, 3), "b": torch.ones(2)})
    assert "prefix" not in str(other.value)


def test_mp_spawn_while_a_spawned_child_imports_the_main_script_is_multiprocessings_error():
    # a script calling mp.spawn without the `if __name__ == "__main__":` guard: torch's
    # children raise multiprocessing's "An attempt has been made to start a new process
    # before the current process has finished its bootstrapping phase ..." (the idiom); each
    # rank of shardflow's MPI job re-ran spawn, started processes that could not find `fn`,
    # and the parent said "a process ended without raising a Python exception (os._exit() or
    # a crash)". The child (mpi_child.py) sets BOOTSTRAPPING while it imports the script, and
    # reports an import error as fn's (ProcessRaisedException with the traceback)
    import shardflow.multiprocessing as sf_mp
    from shardflow.multiprocessing.spawn import BOOTSTRAPPING

    BOOTSTRAPPING[0] = True
    try:
        with pytest.raises(RuntimeError, match=r"(?s)An attempt has been made to start a new process "
                           r"before the current process has finished its bootstrapping phase.*"
                           r"if __name__ == '__main__':"):
            sf_mp.spawn(print, nprocs=2)
    finally:
        BOOTSTRAPPING[0] = False


def test_sizes_whose_storage_overflows_are_torchs_runtime_error():
    # torch: RuntimeError "Storage size calculation overflowed with sizes=[...]"; shardflow:
    # NumPy's ValueError "array is too big; ..."
    real = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        real.ones(2**62, 2**62)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed in op 'ones'") as info:
        torch.ones(2**62, 2**62)
    assert isinstance(info.value, ValueError)  # still caught by `except ValueError`
    from shardflow.backend.cpu_oom import as_torch_overflow

    plain = ValueError("another value error")  # any other ValueError passes as it was
    assert as_torch_overflow(plain, "ones") is plain
