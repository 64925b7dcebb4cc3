"""What a training loop does when a step's loss or gradient norm is NaN or infinite.

The check runs after backward and before ``optimizer.step()``, so a bad step never reaches
the parameters (nor, therefore, a checkpoint). Under data parallel the ranks first agree
on it (an all-reduce of a flag; see ``cli/train/loop.py``): a rank whose own loss is finite
still skips or stops with the others.

* ``raise`` (default): stop with :class:`NonFiniteError`, naming the step, the loss, the
  gradient norm and the learning rate.
* ``skip``: skip that update (gradients are dropped; the step counter and the learning-rate
  schedule still advance, as with PyTorch's ``GradScaler``), count it, and stop with
  :class:`NonFiniteError` once ``max_consecutive`` steps in a row were skipped — training
  that cannot recover should end, not idle.
"""

from __future__ import annotations

__all__ = ["NonFiniteError", "NonFiniteGuard", "MODES"]

MODES = ("raise", "skip")


class NonFiniteError(RuntimeError):
    """Training stopped on a non-finite loss or gradient; ``step`` is where it happened."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


def _describe(step: int, loss: float, grad_norm: float, lr: float) -> str:
    return f"step {step} (loss {loss:.6g}, gradient norm {grad_norm:.6g}, lr {lr:.3g})"


class NonFiniteGuard:
    """Decides, step by step, whether to apply, skip or stop (see the module docstring)."""

    def __init__(self, mode: str = "raise", max_consecutive: int = 10):
        if mode not in MODES:
            raise ValueError(f"on_nonfinite must be one of {MODES}, got {mode!r}")
        if max_consecutive < 1:
            raise ValueError(f"max_consecutive must be at least 1, got {max_consecutive}")
        self.mode, self.max_consecutive = mode, max_consecutive
        self.skipped: list[int] = []  # steps skipped (this process's run)
        self.streak = 0

    def skip_update(self, step: int, nonfinite: bool, loss: float, grad_norm: float,
                    lr: float, parameters_finite=lambda: True) -> bool:
        """True when the update of ``step`` must be skipped; raises NonFiniteError to stop.
        ``parameters_finite()`` is asked only when stopping: an earlier update may have
        overflowed the parameters themselves (a finite gradient times a huge learning rate),
        and the message must not claim they are finite then."""
        if not nonfinite:
            self.streak = 0
            return False
        where = _describe(step, loss, grad_norm, lr)
        if self.mode == "raise":
            state = ("so the parameters are still finite" if parameters_finite() else
                     "but the parameters were already non-finite (an earlier update overflowed "
                     "them: a finite gradient times too large a learning rate)")
            raise NonFiniteError(
                f"the training loss or gradient became non-finite at {where}; the update was "
                f"not applied, {state}", step)
        self.skipped.append(step)
        self.streak += 1
        if self.streak >= self.max_consecutive:
            first = step - self.streak + 1
            raise NonFiniteError(
                f"{self.streak} steps in a row had a non-finite loss or gradient (steps "
                f"{first}..{step}, --max-consecutive-skips {self.max_consecutive}); last: {where}; "
                "the parameters are still finite but training is not recovering", first)
        return True
