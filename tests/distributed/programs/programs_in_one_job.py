"""Several test programs of this package, one after the other, in one job (one launch
instead of one each). Each program must end with all ranks in step (a mismatch that raises
on every rank and is caught counts). This runner itself neither initialises nor uses the
process group (so a program may init and destroy it); the order of the programs' own
collectives keeps the ranks in step.

``argv``: the names of the programs to run, in order, each optionally followed by
``:ARG1:ARG2...`` (the arguments for its ``main``). Before each program a rank prints
``CASE {name} START {rank}``, after it returned ``CASE {name} OK {rank}``; a program that
raises ends the job (shardflow's excepthook), naming the rank, so the missing OK lines name
the case that failed."""

import importlib


def main(argv):
    from shardflow import _config

    rank = _config.launch_info().rank  # from the launcher: no process group needed
    for spec in argv:
        name, *args = spec.split(":")
        program = importlib.import_module(f"{__package__}.{name}")
        print(f"CASE {name} START {rank}", flush=True)
        program.main(args)
        print(f"CASE {name} OK {rank}", flush=True)
