"""``torch.distributed.checkpoint.format_utils``: a DCP checkpoint folder <-> one ``torch.save`` file.

* ``dcp_to_torch_save(dcp_checkpoint_dir, torch_save_path)`` assembles every tensor whole
  from its pieces (``consolidate.read_full``: each piece once, CRCs checked), rebuilds the
  nested state dict from the saved paths (``{"app": {"model": ..., "optim": ...}}`` for a
  checkpoint of ``{"app": AppState(...)}``, as PyTorch) and writes it in ``torch.save``'s
  zip format, so ``torch.load`` and ``shardflow.load`` both read it. One process, no
  collectives, the whole state in memory (PyTorch: "run it on a single rank").
* ``torch_save_to_dcp(torch_save_path, dcp_checkpoint_dir)``: a ``torch.save`` file (or a
  ``shardflow.save`` file) read with ``weights_only=False``, as PyTorch reads it, written as
  a one-rank DCP checkpoint that :func:`~.load` reshards into any layout.
* ``python -m shardflow.distributed.checkpoint.format_utils {torch_to_dcp,dcp_to_torch} SRC
  DST``: PyTorch's command line, with its printout and its "No checkpoint found" skip.

A ``dcp_checkpoint_dir`` that is not a folder raises ``CheckpointException``, as PyTorch's
load does (its reader fails to read ``.metadata`` there), with a message that says what was
given (shardflow's ``CheckpointException`` is an ``Exception``; torch's a ``BaseException``).
Deviation: the checkpoint folders are shardflow's (safetensors pieces + ``index.json``),
not PyTorch's ``.distcp`` files; ``BroadcastingTorchSaveReader`` and
``DynamicMetaLoadPlanner`` (a torch.save file loaded straight into a sharded state dict)
are not provided: ``torch_save_to_dcp`` then :func:`~.load` does the same in two steps.
"""

from __future__ import annotations

import argparse
import os

from ...checkpoint import load as _load_safetensors
from ...checkpoint.pytorch_file import is_pytorch_zip, load_pytorch_file
from ...checkpoint.pytorch_writer import save_pytorch_file
from .consolidate import read_full
from .filesystem import FileSystemWriter
from .metadata import CheckpointException
from .saver import save

__all__ = ["dcp_to_torch_save", "torch_save_to_dcp"]

_NOT_PROVIDED = ("BroadcastingTorchSaveReader", "DynamicMetaLoadPlanner")


def dcp_to_torch_save(dcp_checkpoint_dir, torch_save_path) -> None:
    """Write the DCP checkpoint in folder ``dcp_checkpoint_dir`` as one ``torch.save`` file."""
    if not os.path.isdir(dcp_checkpoint_dir):
        what = "a file" if os.path.exists(dcp_checkpoint_dir) else "missing"
        raise CheckpointException(
            f"dcp_to_torch_save: expected a DCP checkpoint folder, but {os.fspath(dcp_checkpoint_dir)!r} "
            f"is {what}; pass the folder dcp.save wrote (torch_save_to_dcp converts a "
            "torch.save file the other way)"
        )
    save_pytorch_file(read_full(dcp_checkpoint_dir), torch_save_path)


def _read_saved(path):
    """What ``torch.load(path, weights_only=False)`` returns: a ``torch.save`` zip file (the
    file is trusted, as PyTorch's function trusts it) or a ``shardflow.save`` file."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    if is_pytorch_zip(data[:8]):
        return load_pytorch_file(data, path, None, weights_only=False)
    return _load_safetensors(path)


def torch_save_to_dcp(torch_save_path, dcp_checkpoint_dir) -> None:
    """Write the state dict in the ``torch.save`` file ``torch_save_path`` as a one-rank DCP
    checkpoint in folder ``dcp_checkpoint_dir`` (no collectives)."""
    state_dict = _read_saved(torch_save_path)
    if not isinstance(state_dict, dict):
        raise ValueError(
            f"torch_save_to_dcp: expected a state dict in {os.fspath(torch_save_path)!r}, got a "
            f"{type(state_dict).__name__}; save a dict (for a module, its state_dict())"
        )
    save(state_dict, storage_writer=FileSystemWriter(dcp_checkpoint_dir), no_dist=True, _note=False)


def __getattr__(name):
    if name in _NOT_PROVIDED:
        raise NotImplementedError(
            f"torch.distributed.checkpoint.format_utils.{name} is not provided by shardflow; "
            "convert the torch.save file with torch_save_to_dcp(path, folder), then dcp.load "
            "from that folder (it reshards into any layout)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv=None) -> None:
    """PyTorch's command line: ``MODE SRC DST``, MODE ``torch_to_dcp`` or ``dcp_to_torch``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", type=str, help="Conversion mode", choices=["torch_to_dcp", "dcp_to_torch"],
                        default="torch_to_dcp")
    parser.add_argument("src", type=str, help="Path to the source model")
    parser.add_argument("dst", type=str, help="Path to the destination model")
    args = parser.parse_args(argv)
    print(f"Converting checkpoint from {args.src} to {args.dst} using method: '{args.mode}'")
    missing = f"No checkpoint found at {args.src}. Skipping conversion."
    if args.mode == "torch_to_dcp":
        if os.path.isfile(args.src):
            torch_save_to_dcp(args.src, args.dst)
        else:
            print(missing)
    elif os.path.isdir(args.src):
        dcp_to_torch_save(args.src, args.dst)
    else:
        print(missing)


if __name__ == "__main__":
    main()
