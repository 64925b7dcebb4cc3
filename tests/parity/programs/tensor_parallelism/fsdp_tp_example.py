# ruff: noqa: I001, F401, E402  (the example's own style kept)
# PyTorch's examples/distributed/tensor_parallelism/fsdp_tp_example.py (github.com/pytorch/
# examples at ecd951d, BSD-3-Clause): 2-D parallelism on a Llama model -- a (dp, tp)
# init_device_mesh, parallelize_module of the embedding / norm / output and of every block
# (SequenceParallel norms, PrepareModuleInput, Colwise/Rowwise attention and SwiGLU
# projections, local head counts), FSDP over the dp mesh (use_orig_params=True), AdamW,
# output.sum() training. Run with torchrun (torch) or `shardflow run -n 2` (its imports
# changed). Changes, and only these: the 4-GPU check is gone (it runs on 2 CPU ranks), device
# "cpu" for "cuda", FSDP gets device_id=torch.device("cpu") (torch's FSDP refuses a CPU
# module otherwise); tp_size comes from TP_SIZE (default 2 as written: the (dp=1, tp=2) mesh;
# TP_SIZE=1 gives (dp=2, tp=1)); a tiny model (dim 16, 2 layers, 4 heads, vocab 64,
# max_seq_len 16) and batch (8, 16) for (8, 256); the model starts from "init.pt" after
# init_weights (both libraries then hold the same weights); each iteration's loss is printed
# by every rank (the `print` after backward), 4 iterations for 10; FSDP2=1 (added) wraps the
# model with fully_shard(model, mesh=dp_mesh) instead of FSDP1, as PyTorch's TP tutorial now
# does: torch 2.13's FSDP1 fails on this model on CPUs ("Cannot writeback when the parameter
# shape changes", in the first forward). llama2_model is a stand-in (see its docstring).
import sys
import os
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from log_utils import rank_log, get_logger

from llama2_model import Transformer, ModelArgs

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed._tensor import Shard, Replicate
from torch.distributed.tensor.parallel import (
    parallelize_module,
    ColwiseParallel,
    RowwiseParallel,
    PrepareModuleInput,
    SequenceParallel
)


"""
This is the script to test 2D Parallel which combines Tensor/Sequence
parallel with Fully Sharded Data Parallel (TP/SP + FSDP) on a example
Llama2 model. We show an E2E working flow from forward, backward
and optimization.
(The original's diagram of the dp x tp layout is left out here.)
"""

tp_size = int(os.environ.get("TP_SIZE", 2))
logger = get_logger()

# understand world topology
_rank = int(os.environ["RANK"])
_world_size = int(os.environ["WORLD_SIZE"])


print(f"Starting PyTorch 2D (FSDP + TP) example on rank {_rank}.")
assert (
    _world_size % tp_size == 0
), f"World size {_world_size} needs to be divisible by TP size {tp_size}"


# create a sharding plan based on the given world_size.
dp_size = _world_size // tp_size

# Create a device mesh with 2 dimensions.
# First dim is the data parallel dimension
# Second dim is the tensor parallel dimension.
device_mesh = init_device_mesh("cpu", (dp_size, tp_size), mesh_dim_names=("dp", "tp"))

rank_log(_rank, logger, f"Device Mesh created: {device_mesh=}")
tp_mesh = device_mesh["tp"]
dp_mesh = device_mesh["dp"]

# For TP, input needs to be same across all TP ranks.
# while for SP, input can be different across all ranks.
# We will use dp_rank for setting the random seed
# to mimic the behavior of the dataloader.
dp_rank = dp_mesh.get_local_rank()

# create model and move it to GPU - init"cuda"_mesh has already mapped GPU ids.
simple_llama2_config = ModelArgs(dim=16, n_layers=2, n_heads=4, vocab_size=64, max_seq_len=16)

model = Transformer.from_model_args(simple_llama2_config).to("cpu")

# init model weights
model.init_weights()
model.load_state_dict(torch.load("init.pt"))

# parallelize the first embedding and the last linear out projection
model = parallelize_module(
    model,
    tp_mesh,
    {
        "tok_embeddings": RowwiseParallel(
            input_layouts=Replicate(),
        ),
        "output": ColwiseParallel(
            input_layouts=Shard(1),
            output_layouts=Replicate()
        ),
        "norm": SequenceParallel(),
        "layers.0": PrepareModuleInput(
            input_layouts=(Replicate(), None),
            desired_input_layouts=(Shard(1), None),
            use_local_output=True,
        ),
    }
)

for layer_id, transformer_block in enumerate(model.layers):
    layer_tp_plan = {
        "attention": PrepareModuleInput(
            input_layouts=(Shard(1), None),
            desired_input_layouts=(Replicate(), None),
        ),
        "attention.wq": ColwiseParallel(),
        "attention.wk": ColwiseParallel(),
        "attention.wv": ColwiseParallel(),
        "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
        "attention_norm": SequenceParallel(),
        "feed_forward": PrepareModuleInput(
            input_layouts=(Shard(1),),
            desired_input_layouts=(Replicate(),),
        ),
        "feed_forward.w1": ColwiseParallel(),
        "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
        "feed_forward.w3": ColwiseParallel(),
        "ffn_norm": SequenceParallel(),
    }

    # Adjust attention module to use the local number of heads
    attn_layer = transformer_block.attention
    attn_layer.n_heads = attn_layer.n_heads // tp_mesh.size()
    attn_layer.n_kv_heads = attn_layer.n_kv_heads // tp_mesh.size()

    # Custom parallelization plan for the model
    parallelize_module(
        module=transformer_block,
        device_mesh=tp_mesh,
        parallelize_plan=layer_tp_plan
    )

# Init FSDP using the dp device mesh
if os.environ.get("FSDP2"):  # (added) fully_shard, as PyTorch's TP tutorial now does
    from torch.distributed.fsdp import fully_shard

    sharded_model = fully_shard(model, mesh=dp_mesh)
else:
    sharded_model = FSDP(model, device_mesh=dp_mesh, use_orig_params=True, device_id=torch.device("cpu"))

rank_log(_rank, logger, f"Model after parallelization {sharded_model=}\n")

# Create an optimizer for the parallelized and sharded model.
lr = 3e-3
rank_log(_rank, logger, f"Creating AdamW optimizer with learning rate {lr}")
optimizer = torch.optim.AdamW(sharded_model.parameters(), lr=lr, foreach=True)

# Training loop:
# Perform a num of iterations of forward/backward
# and optimizations for the sharded module.
rank_log(_rank, logger, "\nStarting 2D training...")
num_iterations = 4
batch_size = 2

for i in range(num_iterations):
    # seeding with dp_rank to ensure identical inputs for TP groups
    torch.manual_seed(i + dp_rank)
    inp = torch.randint(64, (8, 16), device="cpu")

    output = sharded_model(inp)
    output.sum().backward()
    print(f"rank {_rank} iter {i} loss {output.sum().item()!r}")
    optimizer.step()
    rank_log(_rank, logger, f"2D iter {i} complete")

rank_log(_rank, logger, "2D training successfully completed!")
