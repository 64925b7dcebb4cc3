# ruff: noqa: E501, F401, I001, E731, E741, UP037  (the program's own style, kept)
"""
KellerJordan/modded-nanogpt (MIT licence), ``train_gpt.py`` of the January 2025 records, the
model and optimizer part in one process: ``CastedLinear`` (``reset_parameters`` overridden,
``F.linear(x, self.weight.type_as(x))``), the merged ``qkv_w`` parameter (3-D, so Muon
orthogonalizes a batch of matrices through ``mT``), half-truncated RoPE from
``(1 / 1024) ** torch.linspace``, ``nn.Buffer``, QK norm by ``F.rms_norm``, value embeddings
mixed by 0-d ``lambdas`` (a float32 0-d parameter times a bfloat16 activation stays
bfloat16), attention under a causal + document + sliding-window mask, relu^2,
the U-net skip weights, embeddings cast to bfloat16 (so the whole trunk runs in bfloat16),
the ``30 * sigmoid(logits / (7.5 * sqrt(d)))`` softcap, ``reduction='sum'`` in training; Adam
(``fused=True``) for embeddings, head and scalars and Muon for the hidden matrices, with the
lr schedule and Muon momentum warm-up. Changed: sizes tiny (6 layers, so the 012...012 value
embedding pattern has no gap), one process (``DistMuon``'s all_gather left out), no
``torch.compile``, ``flex_attention`` (torch has no flex_attention backward on a CPU) is
``scaled_dot_product_attention`` with the dense boolean mask of the same ``mask_mod``
(upstream builds block masks from 128-token blocks), random token data.
"""
import math
import sys
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


def zeropower_via_newtonschulz5(G: Tensor, steps: int) -> Tensor:
    assert G.ndim >= 2
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.bfloat16()
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr=0.02, momentum=0.95, nesterov=True, ns_steps=5):
        defaults = dict(lr=lr, momentum=momentum, nesterov=nesterov, ns_steps=ns_steps)
        params = [*params]
        param_groups = []
        for size in {p.numel() for p in params}:
            group = dict(params=[p for p in params if p.numel() == size])
            param_groups.append(group)
        super().__init__(param_groups, defaults)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(g)
                buf: Tensor = state["momentum_buffer"]
                buf.lerp_(g, 1 - group["momentum"])
                g = g.lerp_(buf, group["momentum"]) if group["nesterov"] else buf
                if g.ndim == 4:
                    g = g.view(len(g), -1)
                g = zeropower_via_newtonschulz5(g, steps=group["ns_steps"]).flatten()
                p.add_(g.view_as(p), alpha=-group["lr"] * max(1, p.size(-2) / p.size(-1))**0.5)


def norm(x: Tensor):
    return F.rms_norm(x, (x.size(-1),))


class CastedLinear(nn.Linear):
    def __init__(self, in_features: int, out_features: int):
        super().__init__(in_features, out_features, bias=False)

    def reset_parameters(self) -> None:
        std = 0.5 * (self.in_features ** -0.5)
        bound = (3 ** 0.5) * std
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)

    def forward(self, x: Tensor):
        return F.linear(x, self.weight.type_as(x))


class Rotary(nn.Module):
    def __init__(self, dim: int, max_seq_len: int):
        super().__init__()
        angular_freq = (1 / 1024) ** torch.linspace(0, 1, steps=dim//4, dtype=torch.float32)
        angular_freq = torch.cat([angular_freq, angular_freq.new_zeros(dim//4)])
        t = torch.arange(max_seq_len, dtype=torch.float32)
        theta = torch.einsum("i,j -> ij", t, angular_freq)
        self.cos = nn.Buffer(theta.cos(), persistent=False)
        self.sin = nn.Buffer(theta.sin(), persistent=False)

    def forward(self, x_BTHD: Tensor):
        assert self.cos.size(0) >= x_BTHD.size(-3)
        cos, sin = self.cos[None, :x_BTHD.size(-3), None, :], self.sin[None, :x_BTHD.size(-3), None, :]
        x1, x2 = x_BTHD.to(dtype=torch.float32).chunk(2, dim=-1)
        y1 = x1 * cos + x2 * sin
        y2 = x1 * (-sin) + x2 * cos
        return torch.cat((y1, y2), 3).type_as(x_BTHD)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int, max_seq_len: int, head_dim=16):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim
        hdim = num_heads * head_dim
        std = 0.5 * (dim ** -0.5)
        bound = (3 ** 0.5) * std
        self.qkv_w = nn.Parameter(torch.empty(3, hdim, dim).uniform_(-bound, bound))
        self.lambdas = nn.Parameter(torch.tensor([0.5, 0.5]))
        self.rotary = Rotary(head_dim, max_seq_len)
        self.c_proj = CastedLinear(hdim, dim)
        self.c_proj.weight.detach().zero_()
        self.attn_scale = 0.12

    def forward(self, x: Tensor, ve: Tensor | None, block_mask: Tensor):
        B, T = x.size(0), x.size(1)
        assert B == 1, "Must use batch size = 1 for FlexAttention"
        q, k, v = F.linear(x, self.qkv_w.flatten(end_dim=1).type_as(x)).view(B, T, 3 * self.num_heads, self.head_dim).chunk(3, dim=-2)
        q, k = norm(q), norm(k)
        q, k = self.rotary(q), self.rotary(k)
        if ve is not None:
            v = self.lambdas[0] * v + self.lambdas[1] * ve.view_as(v)
        else:
            v = self.lambdas[0] * v
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=block_mask, scale=self.attn_scale).transpose(1, 2)
        y = y.contiguous().view(B, T, self.num_heads * self.head_dim)
        y = self.c_proj(y)
        return y


class MLP(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        hdim = 4 * dim
        self.c_fc = CastedLinear(dim, hdim)
        self.c_proj = CastedLinear(hdim, dim)
        self.c_proj.weight.detach().zero_()

    def forward(self, x: Tensor):
        x = self.c_fc(x)
        x = F.relu(x).square()
        x = self.c_proj(x)
        return x


class Block(nn.Module):
    def __init__(self, dim: int, num_heads: int, max_seq_len: int, layer_idx: int):
        super().__init__()
        self.attn = CausalSelfAttention(dim, num_heads, max_seq_len) if layer_idx != 7 else None
        self.mlp = MLP(dim)
        self.lambdas = nn.Parameter(torch.tensor([1., 0.]))

    def forward(self, x: Tensor, ve: Tensor | None, x0: Tensor, block_mask: Tensor):
        x = self.lambdas[0] * x + self.lambdas[1] * x0
        if self.attn is not None:
            x = x + self.attn(norm(x), ve, block_mask)
        x = x + self.mlp(norm(x))
        return x


def next_multiple_of_n(v: float | int, *, n: int):
    return next(x for x in range(n, int(v) + 1 + n, n) if x >= v)


class GPT(nn.Module):
    def __init__(self, vocab_size: int, num_layers: int, num_heads: int, model_dim: int, max_seq_len: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, model_dim)
        self.value_embeds = nn.ModuleList([nn.Embedding(vocab_size, model_dim) for _ in range(3)])
        self.blocks = nn.ModuleList([Block(model_dim, num_heads, max_seq_len, i) for i in range(num_layers)])
        self.lm_head = CastedLinear(model_dim, next_multiple_of_n(vocab_size, n=16))
        self.lm_head.weight.detach().zero_()
        assert num_layers % 2 == 0
        self.skip_weights = nn.Parameter(torch.ones(num_layers//2))

    def create_blockmasks(self, input_seq: Tensor, sliding_window_num_blocks: Tensor):
        BLOCK_SIZE = 4  # (128 upstream)
        docs = (input_seq == 0).cumsum(0)
        window = sliding_window_num_blocks * BLOCK_SIZE

        def document_causal(b, h, q_idx, kv_idx):
            causal_mask = q_idx >= kv_idx
            document_mask = docs[q_idx] == docs[kv_idx]
            return causal_mask & document_mask

        def sliding(b, h, q_idx, kv_idx):
            return document_causal(b, h, q_idx, kv_idx) & (q_idx - kv_idx < window)

        idx = torch.arange(len(input_seq))
        long_bm = document_causal(0, 0, idx[:, None], idx[None, :])
        short_bm = sliding(0, 0, idx[:, None], idx[None, :])
        return long_bm, short_bm

    def forward(self, input_seq: Tensor, target_seq: Tensor, sliding_window_num_blocks: Tensor):
        assert input_seq.ndim == 1
        ve = [value_embed(input_seq) for value_embed in self.value_embeds]
        ve = [ve[0], ve[1], ve[2]] + [None] * (len(self.blocks) - 6) + [ve[0], ve[1], ve[2]]
        assert len(ve) == len(self.blocks)
        long_bm, short_bm = self.create_blockmasks(input_seq, sliding_window_num_blocks)
        block_masks = [long_bm, short_bm, short_bm, long_bm, short_bm, long_bm]
        x = x0 = norm(self.embed(input_seq)[None])
        skip_connections = []
        n = len(self.skip_weights)
        for i in range(len(self.blocks)):
            if i >= n:
                x = x + self.skip_weights[i - n] * skip_connections.pop()
            x = self.blocks[i](x, ve[i], x0, block_masks[i])
            if i < n:
                skip_connections.append(x)
        x = norm(x)
        logits = self.lm_head(x).float()
        logits = 30 * torch.sigmoid(logits / (7.5 * x.size(-1)**0.5))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), target_seq, reduction='sum' if self.training else 'mean')
        return loss


if __name__ == "__main__":
    torch.manual_seed(0)
    vocab_size, seq_len = 50, 32
    model = GPT(vocab_size=vocab_size, num_layers=6, num_heads=2, model_dim=32, max_seq_len=seq_len)
    if "--fp32-trunk" not in sys.argv:  # (added: the same run with a float32 trunk)
        for m in model.modules():
            if isinstance(m, nn.Embedding):
                m.bfloat16()
    print("embed", model.embed.weight.dtype, "lm_head", tuple(model.lm_head.weight.shape), model.lm_head.weight.dtype)
    print("rotary", [round(v, 6) for v in model.blocks[0].attn.rotary.cos[5, :6].tolist()], model.blocks[0].attn.rotary.sin.shape)
    print("buffers", [name for name, _ in model.named_buffers()][:2], len(model.state_dict()))
    hidden_matrix_params = [p for n, p in model.blocks.named_parameters() if p.ndim >= 2 and "embed" not in n]
    embed_params = [p for n, p in model.named_parameters() if "embed" in n]
    scalar_params = [p for p in model.parameters() if p.ndim < 2]
    head_params = [model.lm_head.weight]
    print("params", len(hidden_matrix_params), len(embed_params), len(scalar_params), sum(p.numel() for p in model.parameters()))
    adam_params = [dict(params=head_params, lr=0.008), dict(params=embed_params, lr=0.6), dict(params=scalar_params, lr=0.04)]
    optimizer1 = torch.optim.Adam(adam_params, betas=(0.8, 0.95), eps=1e-10, fused=True)
    optimizer2 = Muon(hidden_matrix_params, lr=0.05, momentum=0.95)
    optimizers = [optimizer1, optimizer2]
    for opt in optimizers:
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
    num_iterations, cooldown_frac = 6, 0.4

    def get_lr(step: int):
        x = step / num_iterations
        assert 0 <= x < 1
        if x < 1 - cooldown_frac:
            return 1.0
        else:
            w = (1 - x) / cooldown_frac
            return w * 1.0 + (1 - w) * 0.1

    def get_window_size_blocks(step: int):
        x = step / num_iterations
        window_size = next_multiple_of_n(16 * x, n=4)
        return torch.tensor(max(window_size // 4, 1), dtype=torch.int32)

    tokens = torch.randint(0, vocab_size, (4 * seq_len + 1,))
    tokens[::11] = 0  # document boundaries (the BOS token)
    model.train()
    for step in range(num_iterations):
        start = (step % 3) * seq_len
        inputs, targets = tokens[start:start + seq_len], tokens[start + 1:start + seq_len + 1]
        window = get_window_size_blocks(step)
        loss = model(inputs, targets, window)
        loss.backward()
        for opt in optimizers:
            for group in opt.param_groups:
                group["lr"] = group["initial_lr"] * get_lr(step)
        for group in optimizer2.param_groups:
            frac = min(step / 300, 1)
            group["momentum"] = (1 - frac) * 0.85 + frac * 0.95
        for opt in optimizers:
            opt.step()
        model.zero_grad(set_to_none=True)
        print(f"step:{step+1}/{num_iterations} train_loss:{loss.item():.4f} window:{window.item()} lr:{get_lr(step):.3f}")
    print("lambdas", [round(v, 5) for v in model.blocks[2].attn.lambdas.tolist()], [round(v, 5) for v in model.blocks[4].lambdas.tolist()])
    print("skip", [round(v, 5) for v in model.skip_weights.tolist()])
    print("qkv", model.blocks[1].attn.qkv_w.dtype, [round(v, 4) for v in model.blocks[1].attn.qkv_w[2, 0, :5].tolist()])
    model.eval()
    with torch.no_grad():
        val_loss = model(tokens[3 * seq_len:4 * seq_len], tokens[3 * seq_len + 1:], torch.tensor(8, dtype=torch.int32))
    print(f"val_loss:{val_loss.item():.4f} {val_loss.dtype}")
