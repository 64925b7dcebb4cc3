"""``torch.compile``'s ``backend`` and ``mode``, checked as torch checks them.

shardflow has one compiler (the tracer and fused executor of this package), so a valid
backend or mode does not change what runs; an unknown one is refused with torch's exception
and message instead of being accepted and ignored (a typo such as ``mode="max_autotune"``
would otherwise pass silently). The names are torch 2.13's: ``torch._dynamo.list_backends``
and ``torch._inductor.list_mode_options``.
"""

from __future__ import annotations

# torch._dynamo.list_backends(exclude_tags=()): every registered name; the default listing
# leaves out the "debug" and "experimental" ones, as torch's
BACKENDS = {
    "aot_eager": "debug", "aot_eager_decomp_partition": "debug",
    "aot_eager_decomp_partition_crossref": "debug", "aot_eager_decomp_partition_with_mode": "debug",
    "aot_eager_default_partitioner": "debug", "aot_ts": "experimental", "cudagraphs": None,
    "dynamo_accuracy_minifier_backend": "debug", "dynamo_minifier_backend": "debug",
    "eager": "debug", "eager_debug": "debug", "eager_noexcept": "debug", "inductor": None,
    "invoke_subgraph": "debug", "openxla": None, "openxla_eval": "experimental",
    "pre_dispatch_eager": "debug", "ts": "experimental", "tvm": None,
}
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


class TorchDynamoException(RuntimeError):
    """``torch._dynamo.exc.TorchDynamoException``."""


class InvalidBackend(TorchDynamoException):
    """``torch._dynamo.exc.InvalidBackend``: ``backend=`` names no registered backend."""

    def __init__(self, name: str):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The backend names ``compile`` accepts, sorted, without those tagged ``exclude_tags``."""
    excluded = set(exclude_tags or ())
    return sorted(name for name, tag in BACKENDS.items() if tag not in excluded)


def check(backend, mode, options) -> None:
    """Raise as ``torch.compile`` does for an unknown ``backend``/``mode`` or both ``mode`` and
    ``options`` given."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified "
                           "at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if isinstance(backend, str):
        if backend not in BACKENDS:
            raise InvalidBackend(backend)
    elif not callable(backend):
        raise InvalidBackend(backend)
