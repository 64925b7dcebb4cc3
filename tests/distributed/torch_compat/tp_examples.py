"""PyTorch's tensor-parallel example programs (pytorch/examples,
distributed/tensor_parallelism), written as there, for ``import torch`` -- the test loads
this file twice, as is and with only its imports changed to shardflow
(``shardflow.testing.parity.load_torch_file``), and compares the two runs.

Changes from the originals, none in the parallel code: tiny sizes, device "cpu" (the
originals say "cuda"), no logging helpers, each script's main body is a function taking the
inputs it would draw (``torch.rand`` streams differ between the libraries) and a ``load``
hook that gives both libraries the same initial weights, and it returns the model and the
losses. ``fsdp_tp_example`` keeps the 2-D mesh, the tensor/sequence-parallel plan and the
training loop; its FSDP wrapping of the ``dp`` dimension is left out (FSDP's names are
tested with FSDP), so with 2 ranks the mesh is (dp=1, tp=2).
"""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed._tensor import Replicate, Shard
from torch.distributed._tensor.device_mesh import init_device_mesh
from torch.distributed.device_mesh import init_device_mesh as init_device_mesh_2d
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)


class ToyModel(nn.Module):
    """MLP based model"""

    def __init__(self):
        super().__init__()
        self.in_proj = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.out_proj = nn.Linear(32, 5)

    def forward(self, x):
        return self.out_proj(self.relu(self.in_proj(x)))


def tensor_parallel_example(inputs, load, optimizer_first=True):
    """tensor_parallel_example.py's body. The original makes the optimizer *before*
    ``parallelize_module`` (``optimizer_first``); in PyTorch that optimizer then holds the
    parameters parallelize_module replaced and its step changes nothing."""
    _world_size = int(os.environ["WORLD_SIZE"])
    device_mesh = init_device_mesh(device_type="cpu", mesh_shape=(_world_size,))
    _rank = device_mesh.get_rank()
    assert _world_size % 2 == 0, f"TP examples require even number of GPUs, but got {_world_size} gpus"

    tp_model = ToyModel().to("cpu")
    load(tp_model)

    lr = 0.25
    if optimizer_first:
        optimizer = torch.optim.AdamW(tp_model.parameters(), lr=lr, foreach=True)

    tp_model = parallelize_module(
        module=tp_model,
        device_mesh=device_mesh,
        parallelize_plan={
            "in_proj": ColwiseParallel(),
            "out_proj": RowwiseParallel(),
        },
    )
    if not optimizer_first:
        optimizer = torch.optim.AdamW(tp_model.parameters(), lr=lr, foreach=True)

    losses = []
    for inp in inputs:
        # For TP, input needs to be same across all TP ranks.
        output = tp_model(inp)
        output.sum().backward()
        optimizer.step()
        losses.append(output.sum().item())
    return tp_model, losses


def sequence_parallel_example(inputs, load):
    """sequence_parallel_example.py's body: every rank's input is its own rows."""
    device_mesh = init_device_mesh(device_type="cpu", mesh_shape=(int(os.environ["WORLD_SIZE"]),))
    _rank = device_mesh.get_rank()

    model = ToyModel().to("cpu")
    load(model)

    sp_model = parallelize_module(
        module=model,
        device_mesh=device_mesh,
        parallelize_plan={
            "in_proj": ColwiseParallel(input_layouts=Shard(0)),
            "out_proj": RowwiseParallel(output_layouts=Shard(0)),
        },
    )

    lr = 0.25
    optimizer = torch.optim.AdamW(sp_model.parameters(), lr=lr, foreach=True)

    losses = []
    for inp in inputs:
        # For SP, input can be different across all ranks.
        output = sp_model(inp)
        output.sum().backward()
        optimizer.step()
        losses.append(output.sum().item())
    return sp_model, losses


# -- fsdp_tp_example.py with a tiny Llama (llama2_model.py's structure, no rotary) ------------


class ModelArgs:
    def __init__(self, dim=16, n_layers=2, n_heads=4, vocab_size=32, max_seq_len=8):
        self.dim, self.n_layers, self.n_heads = dim, n_layers, n_heads
        self.n_kv_heads, self.vocab_size, self.max_seq_len = n_heads, vocab_size, max_seq_len
        self.norm_eps = 1e-5


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight

    def reset_parameters(self):
        torch.nn.init.ones_(self.weight)


class Attention(nn.Module):
    def __init__(self, model_args):
        super().__init__()
        self.n_heads = model_args.n_heads
        self.n_kv_heads = model_args.n_kv_heads
        self.head_dim = model_args.dim // model_args.n_heads
        self.wq = nn.Linear(model_args.dim, model_args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(model_args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(model_args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(model_args.n_heads * self.head_dim, model_args.dim, bias=False)

    def forward(self, x, freqs_cis):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        # a real-valued stand-in for the rotary embedding: a per-position scale
        xq = xq * freqs_cis[None, :, None, :]
        xk = xk * freqs_cis[None, :, None, :]
        xq, xk, xv = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        output = F.scaled_dot_product_attention(xq, xk, xv, is_causal=True)
        output = output.transpose(1, 2).contiguous()
        output = output.view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id, model_args):
        super().__init__()
        self.attention = Attention(model_args)
        self.feed_forward = FeedForward(model_args.dim, 4 * model_args.dim)
        self.layer_id = layer_id
        self.attention_norm = RMSNorm(model_args.dim, eps=model_args.norm_eps)
        self.ffn_norm = RMSNorm(model_args.dim, eps=model_args.norm_eps)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        out = h + self.feed_forward(self.ffn_norm(h))
        return out


class Transformer(nn.Module):
    def __init__(self, model_args):
        super().__init__()
        self.model_args = model_args
        self.tok_embeddings = nn.Embedding(model_args.vocab_size, model_args.dim)
        self.register_buffer("freqs_cis", 1.0 + 0.1 * torch.arange(
            model_args.max_seq_len * (model_args.dim // model_args.n_heads)).float().view(
                model_args.max_seq_len, -1) / model_args.max_seq_len, persistent=False)
        self.layers = torch.nn.ModuleList()
        for layer_id in range(model_args.n_layers):
            self.layers.append(TransformerBlock(layer_id, model_args))
        self.norm = RMSNorm(model_args.dim, eps=model_args.norm_eps)
        self.output = nn.Linear(model_args.dim, model_args.vocab_size, bias=False)

    def forward(self, tokens):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        freqs_cis = self.freqs_cis[0:seqlen]
        for layer in self.layers:
            h = layer(h, freqs_cis)
        h = self.norm(h)
        output = self.output(h).float()
        return output

    @classmethod
    def from_model_args(cls, model_args):
        return cls(model_args)


def fsdp_tp_example(inputs, load, tp_size=2):
    """fsdp_tp_example.py's body (without the FSDP wrapping, see the module docstring)."""
    _rank = int(os.environ["RANK"])
    _world_size = int(os.environ["WORLD_SIZE"])
    assert _world_size % tp_size == 0, f"World size {_world_size} needs to be divisible by TP size {tp_size}"
    dp_size = _world_size // tp_size

    device_mesh = init_device_mesh_2d("cpu", (dp_size, tp_size), mesh_dim_names=("dp", "tp"))
    tp_mesh = device_mesh["tp"]
    dp_mesh = device_mesh["dp"]
    dp_rank = dp_mesh.get_local_rank()

    simple_llama2_config = ModelArgs(dim=16, n_layers=2, n_heads=4, vocab_size=32)
    model = Transformer.from_model_args(simple_llama2_config).to("cpu")
    load(model)

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

        parallelize_module(
            module=transformer_block,
            device_mesh=tp_mesh,
            parallelize_plan=layer_tp_plan
        )

    lr = 3e-3
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, foreach=True)

    losses = []
    for inp in inputs[dp_rank]:
        output = model(inp)
        output.sum().backward()
        optimizer.step()
        losses.append(output.sum().item())
    return model, losses
