"""Run RPC programs on WORLD processes forked from one that has already imported the
framework: ``python forked_world.py torch|shardflow WORLD PROGRAM ARGS...`` runs one program;
``python forked_world.py torch|shardflow --batch SPEC.json`` runs several at once, forked from
the same parent (SPEC: a list of ``{"world", "program", "args", "out"}``).

Importing PyTorch takes seconds per process, and several processes importing it at once
on a small machine take tens of seconds; forking after one import makes each program run
cost one import, and a batch makes several programs cost one import in all. The programs of a
batch run at the same time: each spends most of its time waiting on the others' messages. Each child gets
RANK (MASTER_ADDR, WORLD_SIZE and the secret come from the environment; MASTER_PORT too for a
single program, a fresh free port per program in a batch), runs PROGRAM as ``__main__`` with
its stdout and stderr in files of its own (gathered rank by rank at the end) and leaves with
``os._exit`` (the program has shut RPC down by then).

PyTorch's rendezvous store lives in this parent, as torchrun's agent hosts it
(TORCHELASTIC_USE_AGENT_STORE): left to rank 0, the store dies when rank 0 leaves, and a rank
still inside ``rpc.shutdown()``'s last store barrier then fails with "Connection reset by
peer" (PyTorch's own race, seen about once in a few hundred runs). Stores are hosted at
MASTER_PORT and MASTER_PORT + 1 (rpc_ddp.py's RPC rendezvous), once every world of a batch is
forked: the children retry until the server is up, and no thread of a store server is ever
forked into a child (the first version hosted each program's stores before forking the next
program's ranks, and a batch hung once in CI).

Exit status of a single program: 0 when every child succeeded, its ranks' stdout printed. In
a batch each program's ranks' stdout goes to its ``out`` file, then a last line
``forked_world: exit N`` (N = 0 when every rank succeeded, 1 otherwise); the batch itself
exits 0 once every program has run.
"""

import json
import os
import runpy
import sys
import tempfile
import traceback

from workers import free_port  # this folder is on sys.path: run as a script


def start_world(world: int, program: str, args: list) -> tuple[str, list]:
    """Fork ``world`` ranks of ``program``; return the folder of their stdout files and their
    process ids."""
    outdir = tempfile.mkdtemp(prefix="forked_world_")
    sys.stdout.flush()
    sys.stderr.flush()
    children = []
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            # each rank's stdout to its own file: ranks sharing one pipe could split lines
            for stream, suffix in ((1, "out"), (2, "err")):
                fd = os.open(os.path.join(outdir, f"{rank}.{suffix}"), os.O_WRONLY | os.O_CREAT, 0o600)
                os.dup2(fd, stream)
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
    return outdir, children


def finish_world(outdir: str, children: list) -> tuple[str, list]:
    """Wait for a started world; return its ranks' stdout (rank by rank, then the stderr of
    every failed rank, so that a failure names its cause) and the ranks that failed."""
    failed = []
    for rank, pid in enumerate(children):
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(rank)
    text = []
    for suffix, ranks in (("out", range(len(children))), ("err", failed)):
        for rank in ranks:
            path = os.path.join(outdir, f"{rank}.{suffix}")
            with open(path) as f:
                body = f.read()
            text.append(body if suffix == "out" else f"forked_world: rank {rank} stderr:\n{body}")
    for name in os.listdir(outdir):
        os.unlink(os.path.join(outdir, name))
    os.rmdir(outdir)
    return "".join(text), failed


STORE_PORTS = (0, 1)  # offsets from MASTER_PORT: the process group's store and rpc_ddp.py's RPC one


def host_stores(framework: str, port: int, world: int) -> list:
    """PyTorch's rendezvous stores for the world just forked (see the module docstring); the
    caller keeps them alive until the world has finished. shardflow's RPC needs none."""
    if framework != "torch":
        return []
    from datetime import timedelta

    import torch.distributed as dist

    return [dist.TCPStore("127.0.0.1", port + offset, world, is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=300)) for offset in STORE_PORTS]


def main():
    framework = sys.argv[1]
    if framework == "torch":
        import torch  # noqa: F401
        import torch.distributed.rpc  # noqa: F401
        os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "True"
    else:
        import shardflow  # noqa: F401
        import shardflow.distributed.rpc  # noqa: F401
    if sys.argv[2] == "--batch":
        with open(sys.argv[3]) as f:
            spec = json.load(f)
        started, ports = [], []
        for run in spec:  # all at once: the programs spend most of their time waiting
            ports.append(free_port())
            os.environ["MASTER_PORT"] = str(ports[-1])
            os.environ["WORLD_SIZE"] = str(run["world"])
            started.append(start_world(run["world"], run["program"], run["args"]))
        # the stores only once every world is forked: a store server's threads must never be
        # forked into a child (a lock one of them held would stay locked there for good)
        stores = [s for run, port in zip(spec, ports) for s in host_stores(framework, port, run["world"])]
        for run, world in zip(spec, started):
            text, failed = finish_world(*world)
            with open(run["out"], "w") as f:
                f.write(text)
                if failed:
                    f.write(f"forked_world: ranks {failed} failed\n")
                f.write(f"forked_world: exit {1 if failed else 0}\n")
        return
    world = start_world(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
    stores = host_stores(framework, int(os.environ["MASTER_PORT"]), int(sys.argv[2]))  # noqa: F841  (kept alive)
    text, failed = finish_world(*world)
    sys.stdout.write(text)
    if failed:
        print(f"forked_world: ranks {failed} failed", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
