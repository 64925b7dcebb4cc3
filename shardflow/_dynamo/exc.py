"""``torch._dynamo.exc``: the exception types programs catch around ``torch.compile``."""

from ..jit.compile_options import InvalidBackend, TorchDynamoException


class Unsupported(TorchDynamoException):
    """Dynamo met something it cannot trace (``fullgraph=True``)."""


class BackendCompilerFailed(TorchDynamoException):
    """The backend raised while compiling a graph."""


__all__ = ["TorchDynamoException", "InvalidBackend", "Unsupported", "BackendCompilerFailed"]
