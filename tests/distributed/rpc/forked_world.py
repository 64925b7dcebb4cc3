"""Run an RPC program on WORLD processes forked from one that has already imported the
framework: ``python forked_world.py torch|shardflow WORLD PROGRAM ARGS...``.

Importing PyTorch takes seconds per process, and several processes importing it at once
on a small machine take tens of seconds; forking after one import makes each program run
cost one import. Each child gets RANK (MASTER_ADDR, MASTER_PORT, WORLD_SIZE and the secret
come from the environment), runs PROGRAM as ``__main__`` with its stdout in a file of its
own (printed by the parent, rank by rank, at the end) and leaves with ``os._exit`` (the
program has shut RPC down by then). Exit status: 0 when every child succeeded.
"""

import os
import runpy
import sys
import tempfile
import traceback


def main():
    framework, world, program, args = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    if framework == "torch":
        import torch  # noqa: F401
        import torch.distributed.rpc  # noqa: F401
    else:
        import shardflow  # noqa: F401
        import shardflow.distributed.rpc  # noqa: F401
    outdir = tempfile.mkdtemp(prefix="forked_world_")
    sys.stdout.flush()
    sys.stderr.flush()
    children = []
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            # each rank's stdout to its own file: ranks sharing one pipe could split lines
            fd = os.open(os.path.join(outdir, f"{rank}.out"), os.O_WRONLY | os.O_CREAT, 0o600)
            os.dup2(fd, 1)
            os.close(fd)
            os.environ["RANK"] = str(rank)
            sys.argv = [program, *args]
            code = 0
            try:
                runpy.run_path(program, run_name="__main__")
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        children.append(pid)
    failed = []
    for rank, pid in enumerate(children):
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(rank)
    for rank in range(world):
        path = os.path.join(outdir, f"{rank}.out")
        with open(path) as f:
            sys.stdout.write(f.read())
        os.unlink(path)
    os.rmdir(outdir)
    if failed:
        print(f"forked_world: ranks {failed} failed", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
