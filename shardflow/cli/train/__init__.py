"""``shardflow train``: train a reference model end to end.

    shardflow train gpt                     # char-level GPT on the stdlib's own source
    shardflow train mnist --data DIR        # LeNet-5 (or --model mlp) on MNIST IDX files
    shardflow train digits                  # MLP on scikit-learn's digits
    shardflow run -n 2 shardflow train gpt  # the same, data parallel over 2 ranks
    shardflow run -n 4 shardflow train gpt --pp 2 --dp 2   # 2 pipeline stages x 2 replicas

Configuration: task defaults < ``--config file.yaml`` (keys are the long flag names with
``_``) < command-line flags. A configuration that cannot work is refused before anything
runs, naming the field and the fix.

Every run writes into ``--out`` (default ``runs/<task>``): ``ckpt_<step>.safetensors``
checkpoints (model, optimizer, RNG state, step, config, world size; the newest
``--keep-checkpoints`` kept, and never the last one with finite parameters pruned),
``metrics.csv`` and ``loss.png``. At start, temp files that killed saves left in ``--out``
are removed (``checkpoint.clean_stale_temp_files``). ``--resume`` continues from the
newest checkpoint that loads, and says which newer files it skipped and why. Resuming
reproduces the uninterrupted run exactly: the batch of step ``s`` is drawn from
``seed, s`` alone (``StepBatchSampler``), the learning rate is a pure function of the
step, and the RNG state travels in the checkpoint.

``--batch-size`` is the global batch. Under ``shardflow run -n N`` (world size > 1) the
model is wrapped in ``DistributedDataParallel`` and rank ``r`` trains on the ``r``-th of N
equal slices of each step's batch (the batch size must be a multiple of N), so N ranks
compute the same mean gradient as one process: the same flags give the same training,
up to float rounding, on any number of ranks, and a checkpoint saved on N ranks resumes
on M. (Dropout masks are the exception: each rank draws them for its own slice, so with
``--dropout`` > 0 the result depends on N; resuming on a different N says so.) Only rank
0 prints and writes files. ``--tp`` / ``--dp`` lay the model out as global tensors;
``--pp`` cuts it into pipeline stages through ``shardflow.parallelize``
(``pipeline.py``); docs/TRAINING.md "Parallel layouts".

Stopping: SIGTERM (preemption; ``shardflow run`` forwards it to every rank), SIGHUP and
SIGINT (Ctrl-C) finish the current step, write a checkpoint and exit 128 + the signal
(143, 129, 130); all ranks agree on the step (``graceful_stop.py``). A second Ctrl-C stops
at once. A non-finite loss or gradient stops training before the update is applied
(``--on-nonfinite raise``, the default; exit code 1, naming the step), or skips that
update (``--on-nonfinite skip``; after ``--max-consecutive-skips`` in a row it stops);
see ``nonfinite.py``.

The job's phases, one module each (``job.train`` runs them in this order):

=================  ===================================================================
``config.py``      flags < YAML < task defaults -> ``TrainConfig``; ``validate``
``layout.py``      join the world; choose and check the layout (DDP, ZeRO, global
                   tensors, pipeline); later lay out the built model and optimizer
``tasks.py``       the task's data sets and model (seeded, on ``--device``)
``checkpoints.py`` ``--out`` preparation, ``resume`` (the ``ResumePoint``), the periodic
                   ``Checkpointer`` (policy ``due``, ``save``, pruning)
``batches.py``     the step-indexed batch sampler, the loader, fixed validation batches
``evaluation.py``  validation loss / accuracy
``metrics.py``     ``metrics.csv`` rows, ``loss.png``
``loop.py``        ``TrainingLoop``: learning rate, step, agreement between ranks,
                   non-finite guard, logging, checkpoints, stop signals; ``finish``
``report.py``      the whole model on rank 0, the plot, the demo
``pipeline.py``    the ``--pp`` step through ``shardflow.parallelize``
``command.py``     ``main(argv)``: exit codes and messages
=================  ===================================================================
"""

from .batches import StepBatchSampler
from .command import main
from .config import (
    TASK_DEFAULTS,
    TASKS,
    ConfigError,
    TrainConfig,
    build_parser,
    resolve_config,
    validate,
)
from .job import train
from .loop import TrainingStopped, lr_at

__all__ = ["main", "train", "TrainConfig", "ConfigError", "TrainingStopped", "resolve_config",
           "validate", "build_parser", "TASKS", "TASK_DEFAULTS", "StepBatchSampler", "lr_at"]
