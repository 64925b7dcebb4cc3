"""Pipeline parallelism (PyTorch's ``torch.distributed.pipelining`` names); docs/PIPELINE.md.

``split.py`` (``pipe_split``, ``split_module``, ``Pipe``), ``stage.py`` (``PipelineStage``:
a stage's module and its send/recv of activations and gradients), ``schedules.py``
(``ScheduleGPipe``, ``Schedule1F1B``, ``ScheduleInterleaved1F1B``), ``mesh.py`` (the
pipeline and data-parallel groups of a ``pp x dp`` layout).
"""

from .mesh import pipeline_groups
from .schedules import (
    PipelineScheduleSingle,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    bubble_fraction,
)
from .split import Pipe, PipeSplit, even_boundaries, pipe_split, split_module
from .stage import PipelineStage

__all__ = [
    "Pipe", "PipeSplit", "PipelineScheduleSingle", "PipelineStage", "Schedule1F1B",
    "ScheduleGPipe", "ScheduleInterleaved1F1B", "bubble_fraction", "even_boundaries",
    "pipe_split", "pipeline_groups", "split_module",
]
