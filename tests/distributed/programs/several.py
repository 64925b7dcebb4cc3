"""Run several test programs one after another in ONE launch (saves ~1.2 s of rank start-up
per program folded in; see ``tests/distributed/_several.py``, the test side).

``argv``: one spec per program, ``MODULE[:ARG:ARG...]`` (a module of this package). Each
program's ``main(args)`` runs inside its own ``warnings.catch_warnings()`` (programs set
their own filters: errors for no-fallback checks, ignore for the op tables), then this rank
prints ``several: passed SPEC``. A program that raises aborts the whole job (shardflow's
excepthook, traceback naming the rank and the program), so the programs after it report
nothing and their tests fail too, with the traceback."""

import importlib
import warnings


def split_spec(spec):
    """``"mod:a:b"`` -> ``("mod", ["a", "b"])``."""
    name, *args = spec.split(":")
    return name, args


def main(argv):
    package = __name__.rpartition(".")[0]
    for spec in argv:
        name, args = split_spec(spec)
        module = importlib.import_module(f"{package}.{name}")
        with warnings.catch_warnings():
            code = module.main(args)
        assert code in (None, 0), (spec, code)
        print(f"several: passed {spec}", flush=True)
