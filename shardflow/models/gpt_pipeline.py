"""GPT as a chain of modules, for pipeline parallelism (docs/PIPELINE.md).

``gpt_sequential(model)`` returns ``nn.Sequential(GPTEmbedding, block_0, ..., block_{L-1},
GPTHead)`` sharing the model's Parameter objects (nothing is copied), whose forward from
token ids equals ``model(idx)[0]`` (the logits). ``gpt_pipe(model, num_stages)`` cuts it
into stages of ``L / num_stages`` blocks each, the embedding with the first stage and the
head with the last; the token embedding and the LM head are one tied Parameter, so the
Pipe lists it as shared between the first and the last stage. ``gpt_loss`` is the model's
loss on (logits, targets).
"""

from __future__ import annotations

import shardflow as torch
import shardflow.nn as nn
from shardflow.distributed.pipelining import Pipe, even_boundaries, split_module
from shardflow.nn import functional as F

__all__ = ["GPTEmbedding", "GPTHead", "gpt_sequential", "gpt_pipe", "gpt_loss"]


class GPTEmbedding(nn.Module):
    """Token + position embeddings (and dropout): (B, T) ids -> (B, T, C)."""

    def __init__(self, model):
        super().__init__()
        self.wte, self.wpe, self.drop = model.transformer.wte, model.transformer.wpe, model.transformer.drop
        self.block_size = model.config.block_size

    def forward(self, idx):
        B, T = idx.size()
        if T > self.block_size:
            raise ValueError(f"cannot forward a sequence of length {T}: block_size is {self.block_size}")
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)  # (T,)
        return self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)


class GPTHead(nn.Module):
    """Final LayerNorm and LM head: (B, T, C) -> (B, T, V) logits."""

    def __init__(self, model):
        super().__init__()
        self.ln_f, self.lm_head = model.transformer.ln_f, model.lm_head

    def forward(self, x):
        return self.lm_head(self.ln_f(x))


def gpt_sequential(model) -> nn.Sequential:
    return nn.Sequential(GPTEmbedding(model), *model.transformer.h, GPTHead(model))


def gpt_pipe(model, num_stages: int) -> Pipe:
    """Stages of equal block counts (raises when ``n_layer % num_stages``)."""
    n = model.config.n_layer
    if num_stages == 1:
        return split_module(gpt_sequential(model), [])
    b = even_boundaries(n, num_stages, first=1)
    return split_module(gpt_sequential(model), b)


def gpt_loss(logits, targets):
    """GPT's loss: cross-entropy over (B*T, V), ignore_index=-1."""
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
