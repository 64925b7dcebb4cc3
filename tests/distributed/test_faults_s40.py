"""faults10 (session 40): fault probes run as a user would, each next to torch 2.13
(docs/DISTRIBUTED.md, "### Session 40 (faults10)"). In-process where the behaviour is local
to one rank; the launcher's output handling is tested on its reader thread."""

import pytest

import shardflow as torch
from shardflow.distributed.pipelining import PipelineStage, ScheduleGPipe


class _RaisingStage(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        raise ValueError("NaN in stage 0's forward")


def test_pipeline_stage_forward_error_is_torchs_runtime_error_chained_to_the_cause():
    # torch wraps a stage module's exception: RuntimeError "[Stage 1] failed to run forward:"
    # with the inputs' debug info, from the original; shardflow raised the bare ValueError,
    # which a program's `except RuntimeError` around schedule.step() did not catch
    stage = PipelineStage(_RaisingStage(), 0, 1, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=lambda out, y: out.sum())
    with pytest.raises(RuntimeError) as info:
        schedule.step(torch.randn(4, 8), target=torch.randn(4, 8))
    msg = str(info.value)
    assert msg.startswith("[Stage 0] failed to run forward:\nargs: ('Tensor(shardflow.Size([2, 8]), "
                          "grad=False, dtype=shardflow.float32)',)\nkwargs: {}"), msg
    assert "micro-batch 0" in msg
    assert isinstance(info.value.__cause__, ValueError)
    assert "NaN in stage 0" in str(info.value.__cause__)
