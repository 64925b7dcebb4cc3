"""``main(argv) -> exit code`` of ``shardflow train``: parses the flags, runs the job, and turns
its endings into exit codes and one-line messages: 0 done, 1 non-finite loss/gradient,
2 refused configuration (flags, YAML, environment variables) or missing data, 128 + signal after a stop signal's checkpoint,
130 on a second Ctrl-C (without saving)."""

from __future__ import annotations

import signal
import sys

from shardflow import _config
from shardflow.comm import failure
from shardflow.comm.failure import STOP_SIGNAL_RECORD

from ..nonfinite import NonFiniteError
from .config import ConfigError, resolve_config
from .job import train
from .loop import TrainingStopped


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "train":
        argv = argv[1:]
    try:
        _config.check_environment()
    except _config.EnvironmentValueError as e:
        print(f"shardflow train: error: {e}", file=sys.stderr)
        return 2
    try:
        cfg = resolve_config(argv)
        restarts = _config.restart_count()
        if restarts and not cfg.resume:  # an elastic restart (shardflow run --max-restarts)
            cfg.resume = True
            if _config.launch_info().rank == 0:
                print(f"shardflow train: restart {restarts} of the job (SHARDFLOW_RESTART_COUNT): "
                      "resuming from the newest checkpoint", flush=True)
        train(cfg)
    except ConfigError as e:
        print(f"shardflow train: error: {e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ImportError) as e:
        print(f"shardflow train: error: {e}", file=sys.stderr)
        return 2
    except TrainingStopped as e:
        name = signal.Signals(e.signum).name
        rank = _config.launch_info().rank
        if rank == 0:
            print(f"shardflow train: stopped by {name} at step {e.step}; "
                  f"checkpoint {e.path}; continue with --resume", file=sys.stderr, flush=True)
        if e.received_here:  # tell `shardflow run` which rank the signal came to
            failure.write_failure_record(
                STOP_SIGNAL_RECORD, f"rank {rank} received {name}; every rank stopped after step "
                f"{e.step} with checkpoint {e.path}; continue with --resume", "", 128 + e.signum)
        return 128 + e.signum
    except NonFiniteError as e:
        if _config.launch_info().rank == 0:
            print(f"shardflow train: error: {e}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted without saving the current step; continue with --resume",
              file=sys.stderr)
        return 130
    return 0
