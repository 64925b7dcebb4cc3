"""The one place shardflow imports tensorboardX (lazily, on the first ``SummaryWriter``),
and the conversion of shardflow tensors to the NumPy arrays tensorboardX accepts."""

from __future__ import annotations

import numpy as np

from ...autograd import Tensor

INSTALL_HINT = ("torch.utils.tensorboard's SummaryWriter writes through tensorboardX, which is "
                "not installed: pip install tensorboardX (or pip install 'shardflow[tensorboard]')")


def tensorboardx():
    """Import tensorboardX, or raise ImportError with the install line."""
    try:
        import tensorboardX
        import tensorboardX.summary  # noqa: F401  (add_scalars writes its runs with these)
        import tensorboardX.writer  # noqa: F401
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return tensorboardX


def to_numpy(value):
    """A shardflow Tensor as a NumPy array (a global tensor's whole value, a device array
    copied to the host); dicts, lists and tuples converted item by item; others unchanged."""
    if isinstance(value, Tensor):
        if value.is_sparse:
            value = value.to_dense()
        if value._spec is not None:
            value = value.full_tensor()
        return np.asarray(value.detach().cpu().numpy())
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_numpy(v) for v in value)
    return value


def flush_to_disk(file_writer) -> None:
    """Write every event queued on a tensorboardX ``FileWriter`` and flush the file, as
    torch's ``flush`` does (its async writer blocks until the queue is written).

    tensorboardX's own ``flush`` only flushes the record writer: the events still in its
    queue are written later by its logger thread (at the next ``flush_secs`` tick or on
    ``close``), so a reader right after ``flush()`` missed the last steps. Here the logger
    thread is stopped (it writes everything queued before the stop signal, in order), the
    file is flushed, and a new logger thread takes the same queue and file. Without those
    internals (another tensorboardX version) this falls back to tensorboardX's flush."""
    efw = getattr(file_writer, "event_writer", None)
    worker = getattr(efw, "_worker", None)
    needed = ("_event_queue", "_ev_writer", "_flush_secs", "_closed")
    if worker is None or not all(hasattr(efw, a) for a in needed) or not hasattr(worker, "stop"):
        file_writer.flush()
        return
    if efw._closed:
        return
    worker.stop()
    efw._ev_writer.flush()
    efw._worker = type(worker)(efw._event_queue, efw._ev_writer, efw._flush_secs)
    efw._worker.start()


def scalar_summary(tag: str, value: float):
    """A scalar ``Summary`` with ``tag`` as given, as torch writes it (``simple_value``).
    tensorboardX's ``summary.scalar`` rewrites a tag's spaces and other characters outside
    ``[-/\\w.]`` to ``_`` (``"Training vs. Validation Loss"`` became
    ``"Training_vs._Validation_Loss"``); torch keeps the tag."""
    from tensorboardX.proto.summary_pb2 import Summary

    return Summary(value=[Summary.Value(tag=tag, simple_value=float(value))])
