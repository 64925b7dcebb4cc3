"""The bench suite's models, each written once over a ``torch``-like module argument (as in
``workloads.py``), so the same definition builds the shardflow model and its PyTorch twin.

======== ====================================================================== ==========
model    definition                                                             unit
======== ====================================================================== ==========
mlp      784-1024-1024-10, SGD-momentum (``workloads.mlp``)                     samples
lenet    LeNet-5 on 1x32x32 (conv5-pool-conv5-pool-120-84-10), SGD-momentum      samples
resnet20 CIFAR ResNet-20 (3 stages x 3 BasicBlocks, 16/32/64 ch, BN), 3x32x32    samples
         (quick: ResNet-8, one block per stage), SGD-momentum
gpt      GPT-mini (``workloads.gpt_mini``): 4L d256 h4 T128 V256, AdamW          tokens
         (quick: 2L d128 h4 T64)
bert     BERT-style encoder: post-LN blocks, bidirectional SDPA, GELU MLP,        tokens
         token-level softmax head; 4L d256 h4 T128 V1024 (quick: 2L d128 T64)
======== ====================================================================== ==========

FLOPs per sample (:func:`flops_per_sample`) are counted from the shapes: 2 per multiply-add
of every Linear / Conv2d (forward hooks on one batch) plus the attention products
(``4 T^2 d`` per layer per sequence), times 3 for forward + backward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .workloads import gpt_mini, mlp


def lenet(torch):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(),
                         nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def resnet_cifar(torch, blocks: int = 3):
    """ResNet-(6 * blocks + 2), CIFAR layout, 1x1-conv projection shortcuts (option B)."""
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                           nn.BatchNorm2d(cout))
            self.relu = nn.ReLU()

        def forward(self, x):  # (B, C, H, W)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (x if self.short is None else self.short(x)))

    layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    cin = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        for b in range(blocks):
            layers.append(Basic(cin, cout, stride if b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def bert_encoder(torch, n_layer=4, d_model=256, n_head=4, seq=128, vocab=1024):
    """BERT-style encoder (post-LN, bidirectional attention) with a token-level head."""
    nn = torch.nn
    F = torch.nn.functional

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.ln1 = nn.LayerNorm(d_model)
            self.fc1 = nn.Linear(d_model, 4 * d_model)
            self.fc2 = nn.Linear(4 * d_model, d_model)
            self.ln2 = nn.LayerNorm(d_model)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)  # 3 x (B, T, C)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)  # (B, nh, T, hs)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v)  # (B, nh, T, hs)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            x = self.ln1(x + self.proj(y))
            return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d_model)
            self.pos = nn.Embedding(seq, d_model)
            self.ln = nn.LayerNorm(d_model)
            self.layers = nn.ModuleList([Layer() for _ in range(n_layer)])
            self.head = nn.Linear(d_model, vocab)

        def forward(self, idx):  # (B, T)
            B, T = idx.shape
            x = self.ln(self.tok(idx) + self.pos(torch.arange(0, T, dtype=torch.long)))
            for layer in self.layers:
                x = layer(x)
            return self.head(x)  # (B, T, vocab)

    return Encoder()


@dataclass
class SuiteModel:
    key: str
    title: str
    build: Any  # lib -> Module
    batch: int  # per rank
    make_batch: Any  # (rng, batch) -> (x, y) NumPy
    optimizer: str  # "sgd" | "adamw"
    tokens: int = 0  # tokens per sample (0: an image/vector model)
    attn: tuple = ()  # (layers, T, d) for the attention FLOPs


def _images(shape, classes=10):
    return lambda r, b: (r.standard_normal((b, *shape)).astype(np.float32),
                         r.integers(0, classes, b))


def _tokens(T, vocab):
    return lambda r, b: (r.integers(0, vocab, (b, T)), r.integers(0, vocab, (b, T)))


def suite_models(quick: bool) -> dict[str, SuiteModel]:
    """The five models, sized for ``--quick`` (2-core CPU, minutes) or the full suite."""
    if quick:
        gpt_cfg, bert_cfg, blocks = dict(n_layer=2, d_model=128, n_head=4, block_size=64), \
            dict(n_layer=2, d_model=128, n_head=4, seq=64, vocab=1024), 1
        b = dict(mlp=64, lenet=64, resnet20=16, gpt=8, bert=8)
    else:
        gpt_cfg, bert_cfg, blocks = dict(n_layer=4, d_model=256, n_head=4, block_size=128), \
            dict(n_layer=4, d_model=256, n_head=4, seq=128, vocab=1024), 3
        b = dict(mlp=128, lenet=128, resnet20=32, gpt=16, bert=16)
    T_g, T_b = gpt_cfg["block_size"], bert_cfg["seq"]
    return {
        "mlp": SuiteModel("mlp", "MLP 784-1024-1024-10", mlp, b["mlp"], _images((784,)), "sgd"),
        "lenet": SuiteModel("lenet", "LeNet-5 1x32x32", lenet, b["lenet"], _images((1, 32, 32)),
                            "sgd"),
        "resnet20": SuiteModel("resnet20", f"ResNet-{6 * blocks + 2} CIFAR 3x32x32",
                               lambda lib: resnet_cifar(lib, blocks), b["resnet20"],
                               _images((3, 32, 32)), "sgd"),
        "gpt": SuiteModel("gpt", f"GPT-mini {gpt_cfg['n_layer']}L d{gpt_cfg['d_model']} T{T_g}",
                          lambda lib: gpt_mini(lib, vocab=256, **gpt_cfg), b["gpt"],
                          _tokens(T_g, 256), "adamw", T_g,
                          (gpt_cfg["n_layer"], T_g, gpt_cfg["d_model"])),
        "bert": SuiteModel("bert", f"BERT-style {bert_cfg['n_layer']}L d{bert_cfg['d_model']} T{T_b}",
                           lambda lib: bert_encoder(lib, **bert_cfg), b["bert"],
                           _tokens(T_b, bert_cfg["vocab"]), "adamw", T_b,
                           (bert_cfg["n_layer"], T_b, bert_cfg["d_model"])),
    }


def make_optimizer(lib, model, kind: str):
    if kind == "sgd":
        return lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return lib.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)


def loss_fn(lib, model, x, y):
    out = model(x)
    if out.ndim == 3:  # (B, T, V) token logits
        return lib.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return lib.nn.functional.cross_entropy(out, y)


def flops_per_sample(torch, model, spec: SuiteModel, x) -> float:
    """Training FLOPs per sample, counted on the PyTorch twin with forward hooks (see the
    module docstring)."""
    macs = [0]

    def hook(mod, inp, out):
        if isinstance(mod, torch.nn.Linear):
            macs[0] += out.numel() * mod.in_features
        elif isinstance(mod, torch.nn.Conv2d):
            k = mod.kernel_size[0] * mod.kernel_size[1]
            macs[0] += out.numel() * (mod.in_channels // mod.groups) * k

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    per_sample = 2 * macs[0] / x.shape[0]
    if spec.attn:
        layers, T, d = spec.attn
        per_sample += layers * 4 * T * T * d
    return 3 * per_sample
