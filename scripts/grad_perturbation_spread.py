"""torch's own spread of a training program: how far its printed lines move when every
gradient is perturbed by about one float32 ulp before each optimizer step.

A parity test that compares shardflow's printout of a program with torch's needs a
tolerance; for programs where a one-ulp gradient difference (a reduction summed in another
order) is amplified (Newton-Schulz in bfloat16, Adam on parameters whose first gradients are
rounding noise), rounding-level tolerances are wrong and the honest bound is torch's own
sensitivity. This runs the program under torch once as it is and then with a step pre-hook
on every ``torch.optim.Optimizer`` that multiplies each gradient by ``1 + 1.2e-7 * randn``
(seeded), and prints the lines that moved, per seed.

Usage::

    python scripts/grad_perturbation_spread.py PROGRAM.py [ARG ...] [--seeds 3]

Needs torch (a test dependency). Used for tests/parity/test_public_programs_more_aj.py
(docs/COMPAT.md, "Session 40 (compat-llm)")."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys
import tempfile


def _run(path: str, argv: list[str], perturb_seed: int) -> list[str]:
    import torch

    original_init = torch.optim.Optimizer.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        if perturb_seed:
            gen = torch.Generator().manual_seed(perturb_seed)

            def pre_hook(opt, _args, _kwargs):
                for group in opt.param_groups:
                    for p in group["params"]:
                        if p.grad is not None and p.grad.is_floating_point():
                            noise = torch.randn(p.grad.shape, generator=gen).to(p.grad.dtype)
                            p.grad.mul_(1 + 1.2e-7 * noise)

            self.register_step_pre_hook(pre_hook)

    torch.optim.Optimizer.__init__ = init
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    try:
        torch.manual_seed(0)
        os.chdir(tempfile.mkdtemp())
        sys.argv = [path, *argv]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        return out.getvalue().splitlines()
    finally:
        torch.optim.Optimizer.__init__ = original_init
        sys.argv = saved_argv
        os.chdir(saved_cwd)


def main(args: list[str]) -> None:
    seeds = 3
    if "--seeds" in args:
        i = args.index("--seeds")
        seeds = int(args[i + 1])
        args = args[:i] + args[i + 2:]
    path, argv = os.path.abspath(args[0]), args[1:]
    base = _run(path, argv, 0)
    for seed in range(1, seeds + 1):
        for a, b in zip(base, _run(path, argv, seed), strict=False):
            if a != b:
                print(f"seed {seed}: {a}\n        -> {b}")


if __name__ == "__main__":
    main(sys.argv[1:])
