"""RPC's named errors. All are RuntimeErrors, as PyTorch's RPC errors are, so code that
catches PyTorch's RuntimeError keeps working; the subclasses say which failure it was."""

from __future__ import annotations


class RPCError(RuntimeError):
    """Base of every RPC failure raised by shardflow.distributed.rpc."""


class RPCTimeoutError(RPCError, TimeoutError):
    """A call (or init_rpc, or shutdown's wait) did not finish within its timeout."""


class RPCConnectionError(RPCError, ConnectionError):
    """A worker could not be reached, or closed its connection (died) while a call to it
    was outstanding."""


class RPCAuthError(RPCError, PermissionError):
    """The peer does not hold the job's secret (or failed the handshake)."""


class RPCProtocolError(RPCError):
    """A malformed, unauthenticated or refused message: wrong version, bad HMAC, a value
    type or function the receiver does not accept."""


class RemoteException(RPCError):
    """A remote function raised an exception whose type cannot be re-created on the caller
    (the message carries the remote type name and traceback)."""
