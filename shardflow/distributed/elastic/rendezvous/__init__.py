"""``torch.distributed.elastic.rendezvous``: the exception classes (a script may catch them)
and, for the handler API, names that raise an error pointing to the launcher (layer L6).

torchrun's rendezvous (c10d / etcd / static handlers) is how its agents find each other; in
shardflow ``shardflow run`` starts every rank as one MPI job and restarts it with
``--max-restarts``, so there is no handler to create or register.
"""

from __future__ import annotations

__all__ = [
    "RendezvousClosedError", "RendezvousConnectionError", "RendezvousError",
    "RendezvousGracefulExitError", "RendezvousHandler", "RendezvousHandlerRegistry",
    "RendezvousInfo", "RendezvousParameters", "RendezvousStateError", "RendezvousStoreInfo",
    "RendezvousTimeoutError", "rendezvous_handler_registry",
]

NO_RENDEZVOUS = (
    "torch.distributed.elastic.rendezvous.{name} has no shardflow counterpart: torchrun's "
    "agents rendezvous, while shardflow run starts the job (`shardflow run -n N script.py`, "
    "`--max-restarts K` for elastic restarts): see docs/DISTRIBUTED.md. A script that only "
    "calls dist.init_process_group() needs no rendezvous of its own."
)


class RendezvousError(Exception):
    """Base of the rendezvous errors (torch's hierarchy)."""


class RendezvousClosedError(RendezvousError):
    """The rendezvous is closed (torch's meaning: the job is ending)."""


class RendezvousTimeoutError(RendezvousError):
    """The rendezvous did not complete in time."""


class RendezvousConnectionError(RendezvousError):
    """The rendezvous backend could not be reached."""


class RendezvousStateError(RendezvousError):
    """The rendezvous state is corrupt."""


class RendezvousGracefulExitError(RendezvousError):
    """A node is not part of the rendezvous and exits gracefully."""


class _NoCounterpart:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(NO_RENDEZVOUS.format(name=type(self).__name__))


class RendezvousHandler(_NoCounterpart):
    """torch's rendezvous handler interface; constructing (or subclassing and constructing)
    one raises the error naming ``shardflow run``."""


class RendezvousParameters(_NoCounterpart):
    """torch's handler parameters; raises the error naming ``shardflow run``."""


class RendezvousInfo(_NoCounterpart):
    """What a rendezvous returns in torch; raises the error naming ``shardflow run``."""


class RendezvousStoreInfo(_NoCounterpart):
    """The store address a rendezvous shares in torch; raises the error naming
    ``shardflow run``."""


class RendezvousHandlerRegistry:
    """torch's registry of handler creators: registering or creating raises the error naming
    ``shardflow run``."""

    def register(self, backend, creator) -> None:
        raise NotImplementedError(NO_RENDEZVOUS.format(name="RendezvousHandlerRegistry.register"))

    def create_handler(self, params):
        raise NotImplementedError(
            NO_RENDEZVOUS.format(name="RendezvousHandlerRegistry.create_handler"))


rendezvous_handler_registry = RendezvousHandlerRegistry()
