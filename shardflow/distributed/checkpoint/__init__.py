"""Sharded checkpoints that reshard on load (``torch.distributed.checkpoint``'s names).

```python
import shardflow.distributed.checkpoint as dcp

model_sd, optim_sd = dcp.get_state_dict(model, optimizer)
dcp.save({"model": model_sd, "optim": optim_sd, "step": step}, checkpoint_id="ckpt/step_100")

# later, on any number of ranks and any layout (DP, TP, fully_shard, one process):
model_sd, optim_sd = dcp.get_state_dict(model, optimizer)
state = {"model": model_sd, "optim": optim_sd, "step": 0}
dcp.load(state, checkpoint_id="ckpt/step_100")          # in place, each rank its own shards
dcp.set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
```

A checkpoint is a folder: one safetensors file per writing rank (``__<rank>_<id>.safetensors``)
and ``index.json`` (logical shapes, dtypes, the layout each tensor was saved with, every
piece's file, byte offsets and CRC-32 blocks, the non-tensor values), written last and
atomically: the commit marker. Modules: ``saver`` (the save protocol), ``loader`` (the
resharding load), ``regions`` (boxes of a logical tensor), ``filesystem`` (files, checksums,
cleanup), ``metadata`` (the index, flattening), ``state_dict`` (model + optimizer helpers),
``consolidate`` (one safetensors file <-> a sharded folder; ``shardflow checkpoint``).
See docs/CHECKPOINT.md.
"""

from .consolidate import dcp_to_safetensors, safetensors_to_dcp
from .filesystem import FileSystemReader, FileSystemWriter
from .loader import load
from .metadata import CheckpointError
from .saver import save
from .state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)

__all__ = [
    "save", "load", "FileSystemWriter", "FileSystemReader", "CheckpointError",
    "get_state_dict", "set_state_dict", "get_model_state_dict", "get_optimizer_state_dict",
    "set_model_state_dict", "set_optimizer_state_dict", "dcp_to_safetensors",
    "safetensors_to_dcp",
]
