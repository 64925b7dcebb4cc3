"""One process of a seeded program run, for ``test_public_programs_more_n.py``.

``python -m tests.parity.programs.ddp_series._seeded SPEC.json`` runs a program as
``python script ARGV`` would (:func:`.._harness.run_script`), after
``<framework>.manual_seed(seed)`` (the DDP tutorial series' programs set no seed: each
process would draw its own data and weights, in torch as well), and records every call of the
``probe`` functions (``[[module path, function], ...]``, e.g. ``[["F", "cross_entropy"]]``;
a third item names a sibling module to look in instead of the script, ``["F",
"cross_entropy", "model"]``):
the result's value and the sums of the first two arguments, so that the test sees each batch's
data and each forward output, not only the loss. It writes ``<RANK or pid>.json`` into
``out``. SPEC also takes ``modules`` (``[[import name, path], ...]``, sibling modules loaded
and rewritten in that order) and ``shardflow`` (run on shardflow, imports rewritten). It is a
test double: nothing in ``shardflow`` knows it.
"""

import json
import os
import sys


def _value(t) -> float:
    return float(t.detach().double().sum().item())


def main(argv):
    from .._harness import _proxy_path, load_file, run_script  # no shardflow for a torch run

    with open(argv[0]) as f:
        spec = json.load(f)
    use_sf = bool(spec["shardflow"])
    lib = __import__("shardflow" if use_sf else "torch")
    lib.manual_seed(spec.get("seed", 0))  # before the sibling modules: they may draw too
    modules = {name: load_file(path, use_sf, name)
               for name, path in spec.get("modules", [])}
    recorded = []

    def after_imports(g):
        for module_path, func_name, *sibling in spec.get("probe", []):
            owner = _proxy_path(modules[sibling[0]] if sibling else g, module_path)
            func = getattr(owner, func_name)

            def probing(*args, _func=func, _name=func_name, **kwargs):
                out = _func(*args, **kwargs)
                recorded.append([_name, _value(out), *(_value(a) for a in args[:2])])
                return out

            setattr(owner, func_name, probing)

    run_script(spec["script"], use_sf, spec.get("argv", []), modules=modules, after_imports=after_imports)
    who = os.environ.get("RANK", f"pid{os.getpid()}")
    with open(os.path.join(spec["out"], f"{who}.json"), "w") as f:
        json.dump({"rank": who, "recorded": recorded}, f)


if __name__ == "__main__":
    main(sys.argv[1:])
