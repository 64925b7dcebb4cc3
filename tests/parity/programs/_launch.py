"""One process of a multi-process public program, for the parity tests.

``python -m tests.parity.programs._launch SPEC.json`` is what each rank runs, under
``python -m torch.distributed.run`` for the torch run and ``shardflow run -n N`` for the
shardflow run (or as the one parent process of a program that starts its own processes).
SPEC is a JSON object:

* ``script``: the program file, run as ``python script ARGV`` would run it
  (:func:`_harness.run_script`), with its imports rewritten when ``shardflow`` is true;
* ``argv``; ``modules``: ``[[import name, path], ...]``, its sibling modules, loaded (and
  rewritten) in that order and registered under their import names;
* ``draws`` (and ``draw_seed``): the random functions given shared NumPy draws
  (:func:`_harness.same_draws`);
* ``record``: ``[[module path, function], ...]`` whose results are recorded
  (:func:`_harness.record_calls`);
* ``out``: a directory; this process writes ``<RANK or pid>.json`` there with what it recorded.

It imports only what the run's framework needs (torch is not imported by a shardflow run).
"""

import json
import os
import sys


def main(argv):
    from ._harness import load_file, record_calls, run_script, same_draws  # no shardflow for torch

    with open(argv[0]) as f:
        spec = json.load(f)
    use_sf = bool(spec["shardflow"])
    modules = {}
    for name, path in spec.get("modules", []):
        modules[name] = load_file(path, use_sf, name)
    recorded = {f"{m}.{fn}": [] for m, fn in spec.get("record", [])}

    def after_imports(g):
        if spec.get("draws"):
            same_draws((g,), spec["draws"], seed=spec.get("draw_seed", 0))
        for m, fn in spec.get("record", []):
            record_calls(g, m, fn, recorded[f"{m}.{fn}"])

    run_script(spec["script"], use_sf, spec.get("argv", []), modules=modules, after_imports=after_imports)
    who = os.environ.get("RANK", f"pid{os.getpid()}")
    with open(os.path.join(spec["out"], f"{who}.json"), "w") as f:
        json.dump({"rank": who, "recorded": recorded}, f)


if __name__ == "__main__":
    main(sys.argv[1:])
