"""PyTorch's pipelining usage (the torch.distributed.pipelining docs), for ``import torch``;
loaded as is and with only its imports changed to shardflow by ``run_pipelining.py``.

* ``MyNetwork`` / ``MyNetworkBlock`` and ``split_and_step``: the docs' "pipeline()" path --
  ``pipeline(module, mb_args, split_spec)``, ``pipe.build_stage(stage_index, device)``, a
  schedule, ``step(x)`` on the first stage and ``step(target=, losses=)`` on the last;
* ``Transformer`` and ``manual_stage``: the docs' "splitting a model manually" path (as
  torchtitan does): build on the meta device, delete what other stages hold, ``to_empty``,
  then ``PipelineStage(model, stage_index, num_stages, device)``.
"""

import torch
import torch.nn as nn
from torch.distributed.pipelining import (  # noqa: F401  (SplitPoint: used through this module)
    PipelineStage,
    ScheduleGPipe,
    SplitPoint,
    pipeline,
)


class MyNetworkBlock(torch.nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin = torch.nn.Linear(in_dim, out_dim)

    def forward(self, x):
        x = self.lin(x)
        x = torch.relu(x)
        return x


class MyNetwork(torch.nn.Module):
    def __init__(self, in_dim, layer_dims):
        super().__init__()
        prev_dim = in_dim
        for i, dim in enumerate(layer_dims):
            setattr(self, f"layer{i}", MyNetworkBlock(prev_dim, dim))
            prev_dim = dim
        self.num_layers = len(layer_dims)
        # 10 output classes
        self.output_proj = torch.nn.Linear(layer_dims[-1], 10)

    def forward(self, x):
        for i in range(self.num_layers):
            x = getattr(self, f"layer{i}")(x)
        return self.output_proj(x)


def loss_fn(output, target):
    return torch.nn.functional.cross_entropy(output, target)


def split_and_step(mod, x, y, rank, world_size, split_spec, schedule_class=ScheduleGPipe,
                   n_microbatches=4):
    """Split with pipeline(), build this rank's stage(s), run one step; returns the stages
    and the last stage's losses (None elsewhere)."""
    pipe = pipeline(module=mod, mb_args=(x.chunk(n_microbatches)[0],), split_spec=split_spec)
    per_rank = pipe.num_stages // world_size
    stages = [pipe.build_stage(rank + k * world_size, torch.device("cpu")) for k in range(per_rank)]
    if per_rank == 1:
        schedule = schedule_class(stages[0], n_microbatches=n_microbatches, loss_fn=loss_fn)
    else:
        schedule = schedule_class(stages, n_microbatches=n_microbatches, loss_fn=loss_fn)
    losses = None
    if rank == 0:
        schedule.step(x)
    else:
        losses = []
        schedule.step(target=y, losses=losses)
    return stages, losses


class Transformer(nn.Module):
    """A chain whose pieces may be deleted (None) on a stage, as the docs' manual split."""

    def __init__(self, vocab=16, dim=8, n_layers=4):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleDict()
        for layer_id in range(n_layers):
            self.layers[str(layer_id)] = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.norm = nn.LayerNorm(dim)
        self.output = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens) if self.tok_embeddings else tokens
        for layer in self.layers.values():
            h = layer(h)
        h = self.norm(h) if self.norm else h
        output = self.output(h).float() if self.output else h
        return output


def manual_stage(stage_index, num_stages, load):
    """The docs' manual split: the whole model on the meta device, other stages' parts
    deleted, materialised with to_empty, then the weights (``load``: the test's hook)."""
    with torch.device("meta"):
        model = Transformer()
        if stage_index == 0:
            for i in ("2", "3"):
                del model.layers[i]
            model.norm = None
            model.output = None
        else:
            model.tok_embeddings = None
            for i in ("0", "1"):
                del model.layers[i]
    model.to_empty(device="cpu")
    load(model)
    return PipelineStage(model, stage_index, num_stages, torch.device("cpu"))


def lm_loss(output, target):
    return torch.nn.functional.cross_entropy(output.reshape(-1, output.shape[-1]), target.reshape(-1))
