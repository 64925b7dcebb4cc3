"""torchrun's command line on shardflow's launcher (layer L6): ``python -m
shardflow.distributed.run --nproc-per-node 2 train.py --lr 3e-4`` (torch: ``torchrun`` /
``python -m torch.distributed.run``) runs ``shardflow run -n 2 train.py --lr 3e-4``
(docs/DISTRIBUTED.md), which sets torchrun's variables (``RANK``, ``LOCAL_RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ...) in every rank.

Translation (:func:`shardflow_run_argv`, torch's option names with ``-`` or ``_``):
``--nproc-per-node N`` -> ``-n N`` (``auto``: the GPUs if CuPy sees any, else the CPUs;
``cpu``; ``gpu``); ``--max-restarts K`` -> ``--max-restarts K``; ``-m`` -> ``-m``;
``--no-python`` -> the command as given; ``--master-addr`` / ``--master-port`` -> the job's
``MASTER_ADDR`` / ``MASTER_PORT``, and so does ``--rdzv-endpoint host:port`` with the static
rendezvous (torchrun's default backend; the endpoint wins, as in torch). One node only:
``--nnodes`` must be 1 (``1``, ``1:1``) and ``--node-rank`` 0; for several machines one ``shardflow run -n N --hosts h1:k,h2:k``
starts them all. torchrun's rendezvous, logging and agent options (``--standalone``,
the other ``--rdzv-*``, ``--monitor-interval``, ``--log-dir``, ``--tee`` ...) are accepted
and have no counterpart. The launcher is started as ``python -m shardflow run`` in this process's place
(``os.execv``), so its exit code is this command's.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import accelerator

__all__ = ["shardflow_run_argv", "main", "get_args_parser"]

_IGNORED = {  # torchrun options with no shardflow counterpart: (flags, takes a value)
    "standalone": (["--standalone"], False),
    "rdzv_backend": (["--rdzv-backend", "--rdzv_backend"], True),
    "rdzv_endpoint": (["--rdzv-endpoint", "--rdzv_endpoint"], True),
    "rdzv_id": (["--rdzv-id", "--rdzv_id"], True),
    "rdzv_conf": (["--rdzv-conf", "--rdzv_conf"], True),
    "monitor_interval": (["--monitor-interval", "--monitor_interval"], True),
    "start_method": (["--start-method", "--start_method"], True),
    "event_log_handler": (["--event-log-handler", "--event_log_handler"], True),
    "role": (["--role"], True),
    "run_path": (["--run-path", "--run_path"], False),
    "log_dir": (["--log-dir", "--log_dir"], True),
    "redirects": (["-r", "--redirects"], True),
    "tee": (["-t", "--tee"], True),
    "local_ranks_filter": (["--local-ranks-filter", "--local_ranks_filter"], True),
    "duplicate_stdout_filters": (["--duplicate-stdout-filters", "--duplicate_stdout_filters"],
                                 True),
    "duplicate_stderr_filters": (["--duplicate-stderr-filters", "--duplicate_stderr_filters"],
                                 True),
    "local_addr": (["--local-addr", "--local_addr"], True),
    "logs_specs": (["--logs-specs", "--logs_specs"], True),
    "numa_binding": (["--numa-binding", "--numa_binding"], True),
    "signals_to_handle": (["--signals-to-handle", "--signals_to_handle"], True),
    "shutdown_timeout": (["--shutdown-timeout", "--shutdown_timeout"], True),
    "virtual_local_rank": (["--virtual-local-rank", "--virtual_local_rank"], False),
}


def get_args_parser() -> argparse.ArgumentParser:
    """torchrun's options (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m shardflow.distributed.run", allow_abbrev=False,
                                description="torchrun's command line on `shardflow run`")
    p.add_argument("--nnodes", default="1:1")
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node", default="1")
    p.add_argument("--max-restarts", "--max_restarts", dest="max_restarts", type=int, default=0)
    p.add_argument("-m", "--module", action="store_true")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default=None)
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=None)
    for dest, (flags, takes_value) in _IGNORED.items():
        if takes_value:
            p.add_argument(*flags, dest=dest, default=None)
        else:
            p.add_argument(*flags, dest=dest, action="store_true")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("auto", "gpu", "cpu"):
        gpus = accelerator.device_count()
        if value == "gpu" and gpus == 0:
            raise ValueError("--nproc-per-node gpu: no GPU is visible (CuPy sees none); "
                             "give a number of processes")
        return gpus if (value == "gpu" or (value == "auto" and gpus)) else (os.cpu_count() or 1)
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"--nproc-per-node {value!r}: expected a number of processes, "
                         "'auto', 'cpu' or 'gpu'") from None
    if n < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, got {n}")
    return n


def shardflow_run_argv(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """``(shardflow run's arguments, environment variables to set)`` for torchrun's ``argv``
    (module docstring); ValueError for what has no counterpart (several nodes)."""
    args = get_args_parser().parse_args(argv)
    nodes = [s.strip() for s in str(args.nnodes).split(":")]
    if any(s != "1" for s in nodes) or args.node_rank != 0:
        raise ValueError(
            f"--nnodes {args.nnodes} --node-rank {args.node_rank}: this command starts one "
            "node; for several machines run one launcher for all of them: `shardflow run -n "
            "<total ranks> --hosts host1:<ranks>,host2:<ranks> script.py` (docs/DISTRIBUTED.md)"
        )
    out = ["-n", str(_nproc(str(args.nproc_per_node)))]
    if args.max_restarts:
        out += ["--max-restarts", str(args.max_restarts)]
    if args.module and args.no_python:
        raise ValueError("-m and --no-python cannot be used together (torchrun's rule)")
    if args.module:
        out += ["-m", args.training_script]
    else:
        out.append(args.training_script)
    out += list(args.training_script_args)
    env = {}
    if args.master_addr is not None:
        env["MASTER_ADDR"] = args.master_addr
    if args.master_port is not None:
        env["MASTER_PORT"] = str(args.master_port)
    if args.rdzv_endpoint and args.rdzv_backend in (None, "static") and not args.standalone:
        env.update(_static_endpoint(args.rdzv_endpoint))
    return out, env


def _static_endpoint(endpoint: str) -> dict[str, str]:
    """torchrun's static rendezvous (its default backend) makes ``--rdzv-endpoint host:port``
    the job's ``MASTER_ADDR`` / ``MASTER_PORT`` (over ``--master-addr`` / ``--master-port``),
    as pytorch/examples' run_example.sh relies on; torch refuses an endpoint without a port."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"--rdzv-endpoint {endpoint!r}: the static rendezvous needs host:port "
                         f"(torch: Port is absent in endpoint: {endpoint}); e.g. localhost:29400")
    return {"MASTER_ADDR": host.strip("[]"), "MASTER_PORT": port}


def main(argv: list[str] | None = None) -> None:
    """Replace this process by ``python -m shardflow run`` with the translated arguments."""
    try:
        run_args, env = shardflow_run_argv(list(sys.argv[1:] if argv is None else argv))
    except ValueError as e:
        sys.stderr.write(f"python -m shardflow.distributed.run: error: {e}\n")
        raise SystemExit(2) from None
    os.environ.update(env)  # the launcher passes MASTER_* on to every rank
    os.execv(sys.executable, [sys.executable, "-m", "shardflow", "run", *run_args])


if __name__ == "__main__":
    main()
