"""``get_error_handler``: the handler ``@record`` uses when given none (torch's path)."""

from .error_handler import ErrorHandler

__all__ = ["get_error_handler"]


def get_error_handler() -> ErrorHandler:
    return ErrorHandler()
