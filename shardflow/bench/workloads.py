"""The engine benchmark's three workloads, written once as PyTorch code over a ``torch``-like
module argument, so the very same definition builds a shardflow model and a PyTorch model.

(a) MLP 784-1024-1024-10, batch 128, SGD with momentum.
(b) CNN conv(3->32,3x3,pad 1)-relu-pool-conv(32->64,3x3,pad 1)-relu-pool-linear(4096->256)-
    relu-linear(256->10) on 3x32x32, batch 64, SGD with momentum.
(c) GPT-mini: 4 layers, d_model 256, 4 heads, seq 128, vocab 256, batch 16, AdamW.
(d) gpt-l, for GPUs: 12 layers, d_model 768, 12 heads, seq 256, batch 16, AdamW.

``flops_per_step`` is the analytic count (2 FLOPs per multiply-add; backward = 2x forward).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Workload:
    name: str
    build: Callable[[Any], Any]  # torch-like module -> nn.Module
    make_batch: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]]
    make_optimizer: Callable[[Any, Any], Any]  # (lib, model) -> optimizer
    loss: Callable[[Any, Any, Any, Any], Any]  # (lib, model, x, y) -> loss
    flops_per_step: float


def mlp(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def cnn(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(4096, 256), nn.ReLU(), nn.Linear(256, 10),
    )


def gpt_mini(torch, n_layer=4, d_model=256, n_head=4, block_size=128, vocab=256):
    """A GPT-2 block stack (pre-LN, GELU MLP, causal SDPA, tied embeddings), nanoGPT style."""
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d_model)
            self.c_attn = nn.Linear(d_model, 3 * d_model)
            self.c_proj = nn.Linear(d_model, d_model)
            self.ln_2 = nn.LayerNorm(d_model)
            self.c_fc = nn.Linear(d_model, 4 * d_model)
            self.mlp_proj = nn.Linear(4 * d_model, d_model)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)  # 3 x (B, T, C)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)  # (B, nh, T, hs)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.c_proj(y)
            x = x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
            return x

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, d_model)
            self.wpe = nn.Embedding(block_size, d_model)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying

        def forward(self, idx):
            B, T = idx.shape
            pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)  # (B, T, C)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))  # (B, T, vocab)

    return GPT()


def _ce(lib, model, x, y):
    return lib.nn.functional.cross_entropy(model(x), y)


def _gpt_loss(lib, model, x, y):
    logits = model(x)
    return lib.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


def _sgd(lib, model):
    return lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def _adamw(lib, model):
    return lib.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)


def _mlp_flops(batch=128):
    macs = 784 * 1024 + 1024 * 1024 + 1024 * 10
    return 3 * 2 * macs * batch


def _cnn_flops(batch=64):
    conv1 = 32 * 32 * 32 * 3 * 9
    conv2 = 16 * 16 * 64 * 32 * 9
    fc = 4096 * 256 + 256 * 10
    return 3 * 2 * (conv1 + conv2 + fc) * batch


def _gpt_flops(batch=16, T=128, d=256, L=4, V=256):
    per_token_params = L * 12 * d * d + V * d  # blocks + lm_head
    attn = L * 2 * T * d  # QK^T and AV per token (causal counted in full, as SDPA does)
    return 3 * 2 * (per_token_params + attn) * batch * T


WORKLOADS = {
    "mlp": Workload(
        "MLP 784-1024-1024-10 (b128, SGD-m)", mlp,
        lambda r: (r.standard_normal((128, 784)).astype(np.float32), r.integers(0, 10, 128)),
        _sgd, _ce, _mlp_flops(),
    ),
    "cnn": Workload(
        "CNN 2xconv+2xfc 3x32x32 (b64, SGD-m)", cnn,
        lambda r: (r.standard_normal((64, 3, 32, 32)).astype(np.float32), r.integers(0, 10, 64)),
        _sgd, _ce, _cnn_flops(),
    ),
    "gpt": Workload(
        "GPT-mini 4L d256 h4 T128 V256 (b16, AdamW)", gpt_mini,
        lambda r: (r.integers(0, 256, (16, 128)), r.integers(0, 256, (16, 128))),
        _adamw, _gpt_loss, _gpt_flops(),
    ),
    # GPU-sized (``bench engine --device cuda``): GPT-2 small's width and depth
    "gpt-l": Workload(
        "GPT 12L d768 h12 T256 V256 (b16, AdamW)",
        lambda torch: gpt_mini(torch, n_layer=12, d_model=768, n_head=12, block_size=256),
        lambda r: (r.integers(0, 256, (16, 256)), r.integers(0, 256, (16, 256))),
        _adamw, _gpt_loss, _gpt_flops(batch=16, T=256, d=768, L=12),
    ),
}

