# ruff: noqa: E501, F401, I001  (the program's own style, kept)
"""
The examples in PyTorch's docstrings (BSD-3-Clause, as PyTorch) for ``nn.MultiheadAttention``
(``attn_output, attn_output_weights = multihead_attn(query, key, value)``),
``nn.Transformer.generate_square_subsequent_mask``, ``nn.TransformerEncoderLayer`` /
``nn.TransformerEncoder`` (``batch_first=True``, ``norm_first``), and
``torch.utils.checkpoint.checkpoint`` / ``checkpoint_sequential``, put together as a small
padded-sequence classifier: boolean ``key_padding_mask`` and float / boolean ``attn_mask``,
``need_weights`` with ``average_attn_weights=False``, ``kdim``/``vdim``, a causal encoder
(``is_causal=True`` with the generated mask), activation checkpointing with
``use_reentrant=False``; 4 AdamW steps. The shapes are tiny, dropout 0 where compared.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

torch.manual_seed(0)
embed_dim, num_heads = 8, 2
multihead_attn = nn.MultiheadAttention(embed_dim, num_heads)
query, key, value = torch.randn(5, 3, embed_dim), torch.randn(6, 3, embed_dim), torch.randn(6, 3, embed_dim)
attn_output, attn_output_weights = multihead_attn(query, key, value)
print("docstring example", tuple(attn_output.shape), tuple(attn_output_weights.shape), f"{attn_output.sum().item():.6f}")

mask = nn.Transformer.generate_square_subsequent_mask(4)
print("square subsequent mask", mask.tolist())

# batch_first, key padding, per-head weights, kdim / vdim
cross = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True, kdim=6, vdim=4)
q = torch.randn(2, 4, embed_dim)
kv_k, kv_v = torch.randn(2, 5, 6), torch.randn(2, 5, 4)
key_padding_mask = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
out, w = cross(q, kv_k, kv_v, key_padding_mask=key_padding_mask, need_weights=True, average_attn_weights=False)
print("per-head weights", tuple(w.shape), [round(v, 5) for v in w[0, 1, 0].tolist()])
float_mask = torch.zeros(4, 5).masked_fill(torch.triu(torch.ones(4, 5, dtype=torch.bool), diagonal=2), float("-inf"))
out2, w2 = cross(q, kv_k, kv_v, attn_mask=float_mask, key_padding_mask=key_padding_mask)
print("float mask + padding", [round(v, 5) for v in w2[0, 0].tolist()], f"{out2.abs().sum().item():.6f}")
self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
out3, w3 = self_attn(q, q, q, attn_mask=mask.isinf(), need_weights=False)
print("bool mask, no weights", w3, f"{out3.sum().item():.6f}")


class Classifier(nn.Module):
    def __init__(self, vocab=11, d_model=embed_dim, nhead=num_heads, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pool_attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.query = nn.Parameter(torch.randn(1, 1, d_model))
        self.head = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.Linear(d_model, 3))

    def forward(self, tokens, use_checkpoint=False):
        pad = tokens == 0
        x = self.embed(tokens)
        causal = nn.Transformer.generate_square_subsequent_mask(tokens.size(1))
        if use_checkpoint:
            for layer in self.encoder.layers:
                x = checkpoint(layer, x, causal, pad, True, use_reentrant=False)
        else:
            x = self.encoder(x, mask=causal, src_key_padding_mask=pad, is_causal=True)
        pooled, weights = self.pool_attn(self.query.expand(x.size(0), -1, -1), x, x, key_padding_mask=pad)
        return self.head(pooled.squeeze(1)), weights


model = Classifier()
tokens = torch.tensor([[3, 5, 2, 0, 0, 0], [1, 4, 4, 9, 2, 7], [6, 2, 0, 0, 0, 0]])
labels = torch.tensor([0, 2, 1])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
for step in range(4):
    logits, weights = model(tokens, use_checkpoint=step % 2 == 1)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.6f} pool weights {[round(v, 5) for v in weights[0, 0].tolist()]}")

with torch.no_grad():
    plain, _ = model(tokens)
    ckpt, _ = model(tokens, use_checkpoint=True)
print("checkpoint == plain", torch.allclose(plain, ckpt), [round(v, 5) for v in plain[1].tolist()])

# checkpoint_sequential over an nn.Sequential
seq = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
inp = torch.randn(4, 8, requires_grad=True)
out = checkpoint_sequential(seq, 2, inp, use_reentrant=False)
out.sum().backward()
print("checkpoint_sequential", f"{out.sum().item():.6f}", [round(v, 5) for v in inp.grad[0].tolist()])
