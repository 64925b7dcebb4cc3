"""Pipeline parallelism (PyTorch's ``torch.distributed.pipelining`` names); docs/PIPELINE.md.

``split.py`` (``pipe_split``, ``split_module``, ``Pipe``), ``frontend.py`` (PyTorch's
``pipeline(module, mb_args, split_spec)``, ``SplitPoint``, ``build_stage``), ``stage.py`` (``PipelineStage``:
a stage's module and its send/recv of activations and gradients), ``schedules.py``
(``ScheduleGPipe``, ``Schedule1F1B``, ``ScheduleInterleaved1F1B``, ``ScheduleLoopedBFS``,
``ScheduleInterleavedZeroBubble``; ``get_schedule_class``), ``mesh.py`` (the
pipeline, data-parallel and tensor-parallel groups of a ``pp x dp x tp`` layout),
``tp_layout.py`` (a stage's parameters laid out over its tensor-parallel sub-mesh).
"""

from .frontend import SplitPoint, build_stage, pipeline
from .mesh import PipelineMesh, pipeline_groups, pipeline_mesh
from .schedules import (
    PipelineScheduleMulti,
    PipelineScheduleSingle,
    Schedule1F1B,
    ScheduleDualPipeV,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
    ScheduleLoopedBFS,
    ScheduleZBVZeroBubble,
    bubble_fraction,
    get_schedule_class,
)
from .split import Pipe, PipeInfo, PipeSplit, even_boundaries, pipe_split, split_module
from .stage import PipelineStage
from .tp_layout import lay_out_stage

__all__ = [
    "Pipe", "PipeSplit", "PipelineMesh", "PipelineScheduleSingle", "PipelineStage", "Schedule1F1B",
    "ScheduleGPipe", "ScheduleInterleaved1F1B", "bubble_fraction", "even_boundaries",
    "lay_out_stage", "pipe_split", "pipeline_groups", "pipeline_mesh", "split_module",
    "SplitPoint", "pipeline", "build_stage", "PipeInfo", "PipelineScheduleMulti", "ScheduleLoopedBFS",
    "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble", "ScheduleDualPipeV", "get_schedule_class",
]
