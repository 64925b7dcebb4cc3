"""torch's deprecated launcher's command line (``python -m torch.distributed.launch``) on
shardflow's launcher (layer L6): ``python -m shardflow.distributed.launch --nproc_per_node 2
train.py`` runs ``shardflow run -n 2`` and, as torch's, gives the script
``--local-rank=<this rank's local rank>`` first among its arguments (each rank:
``launch_rank.py``), unless ``--use-env`` is passed (then it is :mod:`.run`: the script reads
``LOCAL_RANK``). The other options are torchrun's (``run.py``). It warns torch's
FutureWarning, as torch does.
"""

from __future__ import annotations

import os
import sys
import warnings

from .run import get_args_parser, shardflow_run_argv

__all__ = ["main", "parse_args"]


def parse_args(args):
    """torchrun's options plus ``--use-env`` / ``--use_env``."""
    parser = get_args_parser()
    parser.prog = "python -m shardflow.distributed.launch"
    parser.add_argument("--use-env", "--use_env", dest="use_env", action="store_true",
                        default=False)
    return parser.parse_args(args)


def launch_argv(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """``(shardflow run's arguments, environment)`` for the launcher's ``argv``."""
    args = parse_args(argv)
    if args.no_python and not args.use_env:
        raise ValueError("When using the '--no-python' flag, you must also set the "
                         "'--use-env' flag.")
    at = argv.index(args.training_script)  # the script's own arguments are left alone
    run_argv = [a for a in argv[:at] if a not in ("--use-env", "--use_env")] + argv[at:]
    out, env = shardflow_run_argv(run_argv)
    if args.use_env:
        return out, env
    # each rank runs launch_rank.py, which inserts --local-rank=<local rank> (torch's order)
    n_at = out.index("-n")
    head = out[:n_at + 2] + (["--max-restarts", str(args.max_restarts)]
                             if args.max_restarts else [])
    target = (["-m", args.training_script] if args.module else [args.training_script])
    return head + ["-m", "shardflow.distributed.launch_rank", *target,
                   *args.training_script_args], env


def main(args=None) -> None:
    """Replace this process by ``python -m shardflow run`` with the translated arguments."""
    warnings.warn(
        "The module torch.distributed.launch is deprecated\nand will be removed in future. "
        "Use torchrun.\nNote that --use-env is set by default in torchrun.\nIf your script "
        "expects `--local-rank` argument to be set, please\nchange it to read from "
        "`os.environ['LOCAL_RANK']` instead. See \n"
        "https://pytorch.org/docs/stable/distributed.html#launch-utility for \n"
        "further instructions\n", FutureWarning, stacklevel=2)
    try:
        run_args, env = launch_argv(list(sys.argv[1:] if args is None else args))
    except ValueError as e:
        sys.stderr.write(f"python -m shardflow.distributed.launch: error: {e}\n")
        raise SystemExit(2) from None
    os.environ.update(env)  # the launcher passes MASTER_* on to every rank
    os.execv(sys.executable, [sys.executable, "-m", "shardflow", "run", *run_args])


if __name__ == "__main__":
    main()
