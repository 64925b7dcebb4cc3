"""PyTorch's distributed tutorials and recipes on 2 ranks (gloo, CPU): run on torch and, with
only their imports changed, on shardflow, each started as the tutorial starts it, comparing
what every rank prints (the table is in docs/COMPAT.md, "Public programs"; the programs are in
``programs/dist_recipes_v/``, each saying what was changed).

* pipelining tutorial (``intermediate_source/pipelining_tutorial.rst``): ``torchrun
  --nnodes 1 --nproc_per_node 2``, the manual split (Option 1, as written) and the
  tracer split (Option 2: ``pipeline(model, mb_args, split_spec={"layers.4":
  SplitPoint.BEGINNING})`` + ``build_stage``; shardflow only: torch 2.13 prints the same four
  losses for both options, seen when this test was written, and its export-based tracer
  costs seconds). The program sets no seed: ``ddp_series/_seeded.py`` seeds each process
  (both stages build the whole model from the same draws, as torch's do). Dropout 0.1 is on
  (training mode): the masks are torch's.
* ZeroRedundancyOptimizer recipe (``recipes_source/zero_redundancy_optimizer.rst``):
  ``python zero_redundancy_optimizer.py`` (two ``mp.spawn`` runs, ZeRO(Adam) then Adam),
  from the program's own ``torch.manual_seed(0)``.

Time: each torch reference starts its processes itself (each imports torch), hence a few
seconds per run.
"""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from shardflow.comm.launcher import rank_env
from shardflow.testing.parity import rewrite_imports

from .programs._harness import assert_close, printed_lines

pytestmark = [pytest.mark.mpi, pytest.mark.usefixtures("torch_single_thread")]

HERE = Path(__file__).parent / "programs" / "dist_recipes_v"
ROOT = Path(__file__).parents[2]
SEEDED = "tests.parity.programs.ddp_series._seeded"
# torch 2.13's own teardown of a gloo process group can abort a child after its work (see
# test_public_programs_multi.py): the torch reference is run again on exactly that
_TORCH_TEARDOWN_ABORT = "terminate called without an active exception"


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _env(extra=None) -> dict:
    env = rank_env({"OMP_NUM_THREADS": "1"})
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PYTHONUNBUFFERED"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


def _run(cmd, cwd: Path, use_sf: bool, env=None, timeout: float = 150.0) -> str:
    """``cmd``'s output (stdout then stderr) without shardflow's ``[rank R] `` prefixes."""
    for _attempt in (1, 2, 3):
        proc = subprocess.run(cmd, cwd=cwd, env=_env(env), capture_output=True, text=True, timeout=timeout)
        out = proc.stdout + proc.stderr
        if proc.returncode == 0 or use_sf or _TORCH_TEARDOWN_ABORT not in out:
            break
    assert proc.returncode == 0, f"{cmd} failed (rc={proc.returncode}):\n{out}"
    return "\n".join(re.sub(r"^\[rank \d+\] ", "", ln) for ln in out.splitlines())


# -- pipelining tutorial ---------------------------------------------------------------------

_TRACER = ("   stage = tracer_model_split(model, example_input_microbatch)\n")
_LOSSES = r"losses: \[(tensor\((\d+\.\d+), grad_fn=<NllLossBackward0>\)(, )?){4}\]"


def _pipelining(tmp_path: Path, name: str, use_sf: bool, tracer: bool = False) -> list:
    """The printed ``losses: [...]`` lines of the tutorial under torchrun's line."""
    d = tmp_path / name
    (d / "out").mkdir(parents=True)
    text = (HERE / "pipelining_tutorial.py").read_text()
    if tracer:  # the tutorial's Option 2: swap which of its two lines is commented out
        assert text.count("   # stage = tracer_model_split(") == text.count("   stage = manual_model_split(") == 1
        text = text.replace("   stage = manual_model_split(model)", "   # stage = manual_model_split(model)")
        text = text.replace("   # stage = tracer_model_split(model, example_input_microbatch)\n", _TRACER)
        assert "\n" + _TRACER in text and "\n   stage = manual_model_split(" not in text
    (d / "pipelining_tutorial.py").write_text(text)
    spec = d / "spec.json"
    spec.write_text(json.dumps({"script": str(d / "pipelining_tutorial.py"), "shardflow": use_sf, "argv": [],
                                "seed": 0, "out": str(d / "out")}))
    module = "shardflow.distributed.run" if use_sf else "torch.distributed.run"
    out = _run([sys.executable, "-m", module, "--nnodes", "1", "--nproc_per_node", "2",
                f"--master_port={_free_port()}", "-m", SEEDED, str(spec)], d, use_sf)
    return [ln for ln in printed_lines(out, "losses: ") if re.fullmatch(_LOSSES, ln)]


def test_pipelining_tutorial_losses_like_torch(tmp_path):
    """Rank 1 (the last stage) prints its four micro-batch losses; rank 0 prints nothing. The
    manual split (as written) and the tracer split print torch's line (4 decimals: the losses
    go through 8 decoder layers with dropout masks, embeddings, LayerNorm, cross-entropy)."""
    th = _pipelining(tmp_path, "torch", False)
    assert len(th) == 1, th
    assert _pipelining(tmp_path, "shardflow", True) == th
    assert _pipelining(tmp_path, "shardflow_tracer", True, tracer=True) == th


# -- ZeroRedundancyOptimizer recipe ----------------------------------------------------------

_ZERO_LINE = r"=== |Max memory|params sum"
_SUM = re.compile(r"params sum is: (-?\d+\.\d+(?:e-?\d+)?)")


def _zero(tmp_path: Path, name: str, use_sf: bool) -> list:
    """Each section's printed lines: [(header, sorted lines without the sums, [sums])]."""
    d = tmp_path / name
    d.mkdir()
    text = (HERE / "zero_redundancy_optimizer.py").read_text()
    (d / "zero_redundancy_optimizer.py").write_text(rewrite_imports(text) if use_sf else text)
    # unbuffered, as on a terminal: the parent's section headers come before its children's lines
    out = _run([sys.executable, "zero_redundancy_optimizer.py"], d, use_sf,
               env={"ZERO_RECIPE_PORT": _free_port(), "PYTHONUNBUFFERED": "1"})
    lines = []
    for ln in out.splitlines():  # a print's text and newline are two writes: cut at each start
        cuts = [m.start() for m in re.finditer(_ZERO_LINE, ln)]
        lines += [ln[a:b].strip() for a, b in zip(cuts, cuts[1:] + [len(ln)])]
    sections = []
    for ln in lines:
        if ln.startswith("==="):
            sections.append((ln, [], []))
        elif (m := _SUM.fullmatch(ln)) is not None:
            sections[-1][2].append(float(m.group(1)))
        else:
            sections[-1][1].append(ln)
    return [(h, sorted(rest), sums) for h, rest, sums in sections]


def test_zero_redundancy_optimizer_recipe_like_torch(tmp_path):
    """Both sections' lines: rank 0's four "Max memory allocated ...: 0.0MB" lines (no CUDA:
    0 in both) and every rank's "params sum is:" after one Adam step, sharded by
    ZeroRedundancyOptimizer or not (equal within each run, as the recipe says)."""
    th = _zero(tmp_path, "torch", False)
    sf = _zero(tmp_path, "shardflow", True)
    assert [s[0] for s in th] == [s[0] for s in sf] == [
        "=== Using ZeroRedundancyOptimizer ===", "=== Not Using ZeroRedundancyOptimizer ==="], sf
    for (header, th_rest, th_sums), (_, sf_rest, sf_sums) in zip(th, sf, strict=True):
        assert sf_rest == th_rest and len(th_rest) == 4, (header, sf_rest, th_rest)
        assert len(th_sums) == len(sf_sums) == 2, (header, th_sums, sf_sums)
        # float32 sums of 20 layers after one Adam step: torch's MKL sqrt and summation order
        assert_close(sf_sums, th_sums, f"{header}: params sums", rtol=2e-6, atol=0)
    assert len({s for sec in sf for s in sec[2]}) == 1, sf  # ZeRO's step is Adam's, on every rank
