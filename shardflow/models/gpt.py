"""GPT: the GPT-2 architecture (nanoGPT's layout and parameter names).

Token + learned position embeddings -> ``n_layer`` pre-LayerNorm blocks
(``x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))``, causal multi-head attention, a 4x GELU
MLP) -> final LayerNorm -> ``lm_head`` whose weight is tied to the token embedding.
Initialisation as GPT-2: normal(0, 0.02), residual projections ``c_proj`` scaled by
``1 / sqrt(2 * n_layer)``, zero biases. Parameter names match nanoGPT, so a nanoGPT
checkpoint's state dict loads directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import shardflow as torch
import shardflow.nn as nn
import shardflow.optim  # noqa: F401 - torch.optim.AdamW in configure_optimizers
from shardflow.nn import functional as F

from ._common import count_parameters, linear_flops, scale

__all__ = ["GPTConfig", "GPT"]


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304  # GPT-2's 50257 rounded up to a multiple of 64
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True  # biases in Linears and LayerNorms, as GPT-2

    def __post_init__(self):
        for name in ("block_size", "vocab_size", "n_layer", "n_head", "n_embd"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"GPTConfig.{name} must be a positive integer, got {v!r}")
        if self.n_embd % self.n_head:
            raise ValueError(
                f"GPTConfig.n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head}); "
                f"e.g. n_embd={self.n_head * max(1, round(self.n_embd / self.n_head))}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig.dropout must be in [0, 1), got {self.dropout}")


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.n_embd = config.n_head, config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)  # 3 x (B, T, C)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.attn_dropout if self.training else 0.0, is_causal=True
        )  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig | None = None, **kwargs):
        super().__init__()
        config = config or GPTConfig(**kwargs)
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self, non_embedding: bool = False) -> int:
        """Parameters (the tied embedding counted once); ``non_embedding`` leaves out the
        position embedding, as nanoGPT's get_num_params does."""
        n = count_parameters(self)
        return n - self.transformer.wpe.weight.numel() if non_embedding else n

    def flops_per_sample(self, seq_len: int | None = None, training: bool = False) -> int:
        """Forward FLOPs for one sequence of ``seq_len`` tokens (default block_size):
        per layer and token ``2*C*3C + 2*C*C + 2*2*C*4C`` (qkv, proj, MLP) + ``2*2*T*C``
        (QK^T, AV); plus the LM head ``2*C*V`` per token. x3 with ``training``."""
        c, T = self.config, seq_len or self.config.block_size
        C = c.n_embd
        per_token = c.n_layer * (linear_flops(C, 3 * C) + linear_flops(C, C) + 2 * linear_flops(C, 4 * C)
                                 + 2 * 2 * T * C) + linear_flops(C, c.vocab_size)
        return scale(per_token * T, training)

    def forward(self, idx, targets=None):
        B, T = idx.size()
        if T > self.config.block_size:
            raise ValueError(
                f"cannot forward a sequence of length {T}: block_size is {self.config.block_size}; "
                "crop the input or build the model with a larger block_size"
            )
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)  # (T,)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))  # (B, T, C)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def tensor_parallel_plan(self, vocab_parallel: bool = False) -> dict:
        """Megatron's layout for ``parallelize_module``: in each block the fused q/k/v
        projection and the MLP's first Linear are column parallel (heads and hidden units
        split; ``blocks=3`` keeps each rank's q, k and v heads together), the two output
        projections row parallel. Embeddings, LayerNorms and the LM head stay whole, unless
        ``vocab_parallel``: then the tied token embedding / LM head is split on the
        vocabulary (the logits stay split and the loss is the parallel cross-entropy).

        Every style keeps its output global (``use_local_output=False``), so this model's
        code runs unchanged on logical shapes (``view(B, T, n_head, hs)``), and the row
        parallel outputs stay partial sums (``output_layouts=Partial()``): the residual add
        keeps them partial and the next LayerNorm all-reduces once."""
        from shardflow.distributed.sbp import Partial, Replicate
        from shardflow.distributed.tensor_parallel import ColwiseParallel, RowwiseParallel

        def col(**kw):
            return ColwiseParallel(use_local_output=False, **kw)

        def row(**kw):
            return RowwiseParallel(output_layouts=Partial(), use_local_output=False, **kw)

        plan = {
            "transformer.h.*.attn.c_attn": col(blocks=3),
            "transformer.h.*.attn.c_proj": row(),
            "transformer.h.*.mlp.c_fc": col(),
            "transformer.h.*.mlp.c_proj": row(),
        }
        if vocab_parallel:
            plan["transformer.wte"] = row(input_layouts=Replicate())  # weight (V, C) split on V
            plan["lm_head"] = col()  # the same tensor: logits split on V
        return plan

    def configure_optimizers(self, weight_decay: float, learning_rate: float, betas=(0.9, 0.95)):
        """AdamW with weight decay on matrices (dim >= 2) only, as nanoGPT."""
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 generator=None):
        """Append ``max_new_tokens`` sampled tokens to ``idx`` (B, T), cropping the context
        to block_size."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature  # (B, V)
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx
