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
``consolidate`` (one safetensors file <-> a sharded folder; ``shardflow checkpoint``),
``planner`` / ``storage`` (torch's planner, storage and metadata names), ``async_save``
(``async_save``, the deprecated ``save_state_dict`` / ``load_state_dict``), ``optimizer``
(``load_sharded_optimizer_state_dict``), ``hf_storage`` (Hugging Face safetensors folders),
``format_utils`` (torch's ``dcp_to_torch_save`` / ``torch_save_to_dcp``; imported as
``shardflow.distributed.checkpoint.format_utils``, as in torch).
See docs/CHECKPOINT.md.
"""

from .async_save import async_save, load_state_dict, save_state_dict
from .consolidate import dcp_to_safetensors, safetensors_to_dcp
from .filesystem import FileSystemReader, FileSystemWriter
from .hf_storage import HuggingFaceStorageReader, HuggingFaceStorageWriter
from .loader import load
from .metadata import CheckpointError, CheckpointException
from .optimizer import load_sharded_optimizer_state_dict
from .planner import (
    DefaultLoadPlanner,
    DefaultSavePlanner,
    LoadPlan,
    LoadPlanner,
    ReadItem,
    SavePlan,
    SavePlanner,
    WriteItem,
)
from .saver import save
from .state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)
from .storage import (
    BytesStorageMetadata,
    ChunkStorageMetadata,
    Metadata,
    StorageReader,
    StorageWriter,
    TensorStorageMetadata,
)

__all__ = [
    "save", "load", "FileSystemWriter", "FileSystemReader", "CheckpointError",
    "get_state_dict", "set_state_dict", "get_model_state_dict", "get_optimizer_state_dict",
    "set_model_state_dict", "set_optimizer_state_dict", "dcp_to_safetensors",
    "safetensors_to_dcp",
    # torch's other DCP names: planner.py, storage.py, async_save.py, optimizer.py, hf_storage.py
    "async_save", "save_state_dict", "load_state_dict", "load_sharded_optimizer_state_dict",
    "CheckpointException", "DefaultSavePlanner", "DefaultLoadPlanner", "SavePlanner",
    "LoadPlanner", "SavePlan", "LoadPlan", "ReadItem", "WriteItem", "StorageReader",
    "StorageWriter", "Metadata", "TensorStorageMetadata", "BytesStorageMetadata",
    "ChunkStorageMetadata", "HuggingFaceStorageWriter", "HuggingFaceStorageReader",
]
