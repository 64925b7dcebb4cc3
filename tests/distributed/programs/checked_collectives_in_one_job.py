"""Several checked-collective programs, one after the other, in one job (one launch instead
of one each): every one of them ends with all ranks in step (each mismatch raises on every
rank, or on the receiver only for point-to-point), so the next can follow.

``argv``: the names of the programs of this package to run, in order, each optionally
followed by ``:ARG`` (one argument for its ``main``). Before each program a rank prints
``CASE {name} START {rank}``, after it returned ``CASE {name} OK {rank}``; a program that
raises ends the job (shardflow's excepthook), naming the rank, so the missing OK lines name
the case that failed."""

import importlib


def main(argv):
    from shardflow import comm

    w = comm.init()
    for spec in argv:
        name, _, arg = spec.partition(":")
        program = importlib.import_module(f"{__package__}.{name}")
        print(f"CASE {name} START {w.rank}", flush=True)
        program.main([arg] if arg else [])
        w.barrier()  # the next case starts only when every rank ended this one
        print(f"CASE {name} OK {w.rank}", flush=True)
