"""``async_save``: :func:`~.save` that returns a ``concurrent.futures.Future`` (PyTorch DCP's
name), and the deprecated ``save_state_dict`` / ``load_state_dict``.

Algorithm: *stage* a copy of the state dict first (every tensor's local array copied, a global
tensor keeping its layout; Stateful values replaced by their ``state_dict()``), so the caller
may change its tensors (the next optimizer step) as soon as ``async_save`` returns. Then:

* one process (``no_dist=True``, or a group of one): the copy is saved on a background thread
  with a one-process group of its own (no communicator shared with the caller); the future
  completes when ``index.json`` is committed and holds what ``save`` returns (or its
  exception);
* a group of several ranks: the save runs before ``async_save`` returns and the future is
  already done. The save's plan exchange and commit are collectives on the caller's group,
  and a background thread issuing them while the training loop issues its own would
  interleave two streams of collectives on one communicator (torch gives its background
  save a separate gloo group for this; shardflow's groups are not thread-safe), so the
  collectives stay on the calling thread.
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import Future

import numpy as np

from ... import comm as _comm
from ...autograd import Tensor, _wrap
from ...backend.xp import get_array_module
from .loader import load
from .planner import check_save_planner
from .saver import save
from .single_process import note_single_process
from .stateful import stateful_to_state_dict

__all__ = ["async_save", "save_state_dict", "load_state_dict", "stage"]


def stage(state_dict):
    """A copy of ``state_dict`` whose tensors own their data (layouts kept); other values
    are shared (they are encoded, not mutated, by the save)."""
    def copy(v):
        if isinstance(v, dict):
            return {k: copy(x) for k, x in v.items()}
        if isinstance(v, np.ndarray):
            return v.copy()
        if isinstance(v, Tensor):
            t = _wrap(get_array_module(v.array).array(v.array, copy=True))
            spec = getattr(v, "_spec", None)
            if spec is not None:
                t._spec = spec
            return t
        return v

    return copy(stateful_to_state_dict(state_dict))


def async_save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
               process_group=None, async_checkpointer_type=None, async_stager=None,
               no_dist: bool = False, use_collectives: bool = True) -> Future:
    """Stage ``state_dict`` and save it (module docstring); the returned future's
    ``result()`` waits for the commit and returns what :func:`~.save` returns."""
    note_single_process("save", no_dist, process_group)  # here, not in the saving thread
    check_save_planner(planner)
    if checkpoint_id is None and storage_writer is None:
        raise ValueError("dcp.async_save needs checkpoint_id=<folder> (or storage_writer=)")
    group = _comm.LocalCommunicator() if no_dist else (process_group or _comm.get_world())
    staged = stage(state_dict)
    future: Future = Future()
    kwargs = {"checkpoint_id": checkpoint_id, "storage_writer": storage_writer,
              "planner": planner, "process_group": process_group, "no_dist": no_dist, "_note": False}

    def run():
        future.set_running_or_notify_cancel()
        try:
            future.set_result(save(staged, **kwargs))
        except BaseException as e:  # the caller sees it from result()
            future.set_exception(e)

    if group.size == 1:
        # a group of one needs no communication: the thread saves with its own one-process
        # group, so it never calls into the communicator the caller goes on using
        kwargs.update(process_group=None, no_dist=True)
        threading.Thread(target=run, name="shardflow-dcp-async-save", daemon=False).start()
    else:
        run()
    return future


def save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank: int = 0,
                    no_dist: bool = False, planner=None):
    """Deprecated (torch's FutureWarning): :func:`~.save` with a storage writer."""
    warnings.warn("`save_state_dict` is deprecated and will be removed in future versions."
                  "Please use `save` instead.", FutureWarning, stacklevel=2)
    return save(state_dict, storage_writer=storage_writer, process_group=process_group,
                no_dist=no_dist, planner=planner, _note=False)  # torch's form gives no one-process note


def load_state_dict(state_dict, storage_reader, process_group=None, coordinator_rank: int = 0,
                    no_dist: bool = False, planner=None) -> None:
    """Deprecated (torch's FutureWarning): :func:`~.load` with a storage reader."""
    warnings.warn("`load_state_dict` is deprecated and will be removed in future versions. "
                  "Please use `load` instead.", FutureWarning, stacklevel=2)
    return load(state_dict, storage_reader=storage_reader, process_group=process_group,
                no_dist=no_dist, planner=planner, _note=False)  # torch's form gives no one-process note
