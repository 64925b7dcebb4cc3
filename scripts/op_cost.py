"""Per-op cost of the small-op line of ``shardflow bench engine``, in instructions.

The chain ``y = y * b`` on 16-element float32 tensors that require grad (forward), then the
same chain followed by ``y.sum().backward()`` (forward + backward), as ``bench/engine.py``'s
``bench_small_op`` runs them. Timings on a shared machine swing with the load; the number of
instructions the interpreter executes does not, so this script runs the chains under
callgrind and reports instructions per op:

    python scripts/op_cost.py                        # shardflow and torch, fwd and fwd+bwd
    python scripts/op_cost.py --libs shardflow --annotate 25

How: callgrind dumps its counters each time the process calls ``getppid``
(``--dump-before=getppid``); the chains are separated by ``os.getppid()`` calls, so each dump
holds exactly one chain (imports and warm-up are in the first). ``--annotate K`` prints the
K most expensive C functions (inclusive) of the forward chain, e.g. to see how much of an
op is NumPy's ufunc machinery and how much the interpreter.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile


def chains(lib_name: str, n: int) -> None:
    """The measured program (run under callgrind by :func:`measure`)."""
    import numpy as np

    if lib_name == "torch":
        import torch as lib
    else:
        import shardflow as lib
    v = np.random.default_rng(0).standard_normal(16).astype(np.float32)

    def chain(backward: bool) -> None:
        a = lib.tensor(v, requires_grad=True)
        b = lib.tensor(v * 0 + 1.0001, requires_grad=True)
        y = a
        for _ in range(n):
            y = y * b
        if backward:
            y.sum().backward()

    for _ in range(3):  # warm-up: caches, lazy imports, the interpreter's specialisation
        chain(True)
    os.getppid()  # dump: imports and warm-up
    chain(False)
    os.getppid()  # dump: the forward chain
    chain(True)
    os.getppid()  # dump: the forward + backward chain


def measure(lib_name: str, n: int, annotate: int = 0) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--dump-before=getppid",
               f"--callgrind-out-file={out}", sys.executable, __file__, "--run", lib_name,
               "--n", str(n)]
        # this checkout's shardflow (a script's own folder, not the root, starts sys.path)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        parts = {int(p.rsplit(".", 1)[1]): p for p in glob.glob(out + ".*")}
        totals = {k: _total(p) for k, p in parts.items()}
        result = {"fwd": totals[2] / n, "fwd+bwd": totals[3] / n}
        if annotate:
            text = subprocess.run(["callgrind_annotate", parts[2]],
                                  check=True, capture_output=True, text=True).stdout
            rows = [ln for ln in text.splitlines() if re.match(r"\s*[\d,]+ \(", ln)]
            result["annotate"] = "\n".join(_short(ln) for ln in rows[:annotate + 1])
        return result


def _short(line: str) -> str:
    """A callgrind_annotate row without the build directories."""
    return re.sub(r"/\S*/", "", line.split(" [")[0])


def _total(path: str) -> int:
    with open(path) as f:
        for line in f:
            m = re.match(r"(?:summary|totals): (\d+)", line)
            if m:
                return int(m.group(1))
    raise RuntimeError(f"no instruction total in {path}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--libs", default="shardflow,torch")
    p.add_argument("--n", type=int, default=500, help="ops per chain")
    p.add_argument("--annotate", type=int, default=0, metavar="K")
    p.add_argument("--run", help=argparse.SUPPRESS)  # the measured program itself
    args = p.parse_args(argv)
    if args.run:
        chains(args.run, args.n)
        return
    for lib_name in args.libs.split(","):
        r = measure(lib_name, args.n, args.annotate)
        print(f"{lib_name:<10} fwd {r['fwd']:>8.0f}   fwd+bwd {r['fwd+bwd']:>8.0f}  instructions per op",
              flush=True)
        if "annotate" in r:
            print(r["annotate"])


if __name__ == "__main__":
    main()
