"""PyTorch's pipelining front end on shardflow (issue 27): the torch.distributed.pipelining
docs' program (``torch_compat/pipeline_program.py``) run on torch (CPU, gloo) and, with only
its imports changed, on shardflow in the same 2 MPI ranks: ``pipeline(module, mb_args,
split_spec)`` + ``pipe.build_stage`` with ScheduleGPipe, Schedule1F1B and
ScheduleInterleaved1F1B (4 stages), and the manual split built under ``torch.device("meta")``
and materialised with ``to_empty`` + ``PipelineStage``: the last stage's micro-batch losses
and every stage parameter's gradient equal torch's (1e-5)."""

from pathlib import Path

import pytest

from shardflow.testing.mpi import run_script

pytest.importorskip("torch")

PROGRAM = Path(__file__).parent / "torch_compat" / "run_pipelining.py"


def test_pytorch_pipelining_program_matches_torch():
    res = run_script(str(PROGRAM), n=2, timeout=300).check()
    assert res.output.count("PIPELINING OK") == 2, res.output
