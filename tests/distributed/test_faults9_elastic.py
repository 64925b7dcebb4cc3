"""faults9 (session 38): a torchrun-style command line with a worker that fails once.

``shardflow run --nnodes 1 --nproc-per-node 2 --max_restarts 1 train.py``: torchrun spells
the flag ``--max-restarts`` or ``--max_restarts``; ``shardflow run`` took only the first and
read the second as the program ("'--max_restarts=1' is neither a .py file ..."). The
restart line said "rank 1 failed (exit code 1, exception)" without the exception: it now
ends with the exception's line, so the log says why the job was restarted.
"""

import pytest

from shardflow.testing.mpi import launch_cli

FAILS_ONCE = """
import os, sys
import shardflow as torch, shardflow.distributed as dist
dist.init_process_group("gloo")
marker = sys.argv[1]
if dist.get_rank() == 1 and not os.path.exists(marker):
    open(marker, "w").close()
    raise RuntimeError("transient failure on rank 1")
x = torch.ones(3)
dist.all_reduce(x)
print("TRAINED", x.tolist(), os.environ["TORCHELASTIC_RESTART_COUNT"], flush=True)
dist.destroy_process_group()
"""


@pytest.mark.mpi
def test_torchrun_style_max_restarts_restarts_a_worker_that_failed_once(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(FAILS_ONCE)
    res = launch_cli(["--nnodes", "1", "--nproc-per-node", "2", "--max_restarts=1",
                      "--timeout", "60", str(script), str(tmp_path / "failed-once")], timeout=120)
    out = res.output
    assert res.returncode == 0, out
    assert ("shardflow run: restart 1 of 1 after rank 1 failed (exit code 1, exception: "
            "RuntimeError: transient failure on rank 1)") in out, out
    assert out.count("TRAINED [2.0, 2.0, 2.0] 1") == 2, out  # the second start, both ranks


def test_the_restart_reason_is_the_exceptions_line_not_its_continuation():
    from shardflow.cli.run import _exception_line

    tb = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
          "    dist.all_reduce(x)\nshardflow.comm.base.CommError: collective mismatch at "
          "collective #1 on a group of 2:\n  rank 0: all_reduce(shape=(3,), dtype=float32, "
          "op=sum) as collective #1\nEvery rank must call the same collectives; fix it.\n"
          "shardflow: rank 1 raised an uncaught CommError; aborting the whole job\n")
    assert _exception_line(tb) == ("shardflow.comm.base.CommError: collective mismatch at "
                                   "collective #1 on a group of 2:")
    assert _exception_line("Traceback (most recent call last):\nKeyboardInterrupt\n") == \
        "KeyboardInterrupt"
    assert _exception_line("") == ""
