"""BERT: a post-LayerNorm Transformer encoder with a masked-language-model head.

Embeddings (word + learned position + token type, LayerNorm, dropout) -> ``num_hidden_layers``
encoder layers (``x = LN(x + attn(x)); x = LN(x + W2 gelu(W1 x))``, bidirectional
multi-head attention with padding mask) -> MLM head (dense, GELU, LayerNorm, decoder tied
to the word embedding plus an output bias). ``forward`` returns ``(logits, loss)``; the
loss is the cross-entropy over positions whose label is not -100 (PyTorch/HF convention).
Initialisation: normal(0, initializer_range) for Linear and Embedding weights, zero biases,
LayerNorm weight 1 / bias 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import shardflow as torch
import shardflow.nn as nn
from shardflow.nn import functional as F

from ._common import count_parameters, linear_flops, scale

__all__ = ["BertConfig", "BertForMaskedLM", "BertModel"]


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {v!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
            )


class BertEmbeddings(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        B, T = input_ids.size()
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device)
        if token_type_ids is None:
            token_type_ids = torch.zeros(B, T, dtype=torch.long, device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))  # (B, T, H)


class BertLayer(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        H = c.hidden_size
        self.n_head = c.num_attention_heads
        self.query, self.key, self.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
        self.attn_out = nn.Linear(H, H)
        self.attn_norm = nn.LayerNorm(H, eps=c.layer_norm_eps)
        self.intermediate = nn.Linear(H, c.intermediate_size)
        self.output = nn.Linear(c.intermediate_size, H)
        self.out_norm = nn.LayerNorm(H, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)
        self.attn_p = c.attention_probs_dropout_prob

    def forward(self, x, attn_mask=None):
        B, T, H = x.size()
        hs = H // self.n_head

        def heads(t):
            return t.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)

        y = F.scaled_dot_product_attention(
            heads(self.query(x)), heads(self.key(x)), heads(self.value(x)), attn_mask=attn_mask,
            dropout_p=self.attn_p if self.training else 0.0,
        )
        y = y.transpose(1, 2).contiguous().view(B, T, H)
        x = self.attn_norm(x + self.dropout(self.attn_out(y)))
        return self.out_norm(x + self.dropout(self.output(F.gelu(self.intermediate(x)))))


class BertModel(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        mask = None
        if attention_mask is not None:  # (B, T) 1 = attend, 0 = padding -> (B, 1, 1, T) bool
            mask = (attention_mask != 0).view(attention_mask.size(0), 1, 1, attention_mask.size(1))
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return x  # (B, T, H)


class BertForMaskedLM(nn.Module):
    def __init__(self, config: BertConfig | None = None, **kwargs):
        super().__init__()
        config = config or BertConfig(**kwargs)
        self.config = config
        self.bert = BertModel(config)
        H = config.hidden_size
        self.transform = nn.Linear(H, H)
        self.transform_norm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(H, config.vocab_size)
        self.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tied
        self.apply(self._init_weights)

    def _init_weights(self, m):
        std = self.config.initializer_range
        if isinstance(m, nn.Linear | nn.Embedding):
            nn.init.normal_(m.weight, 0.0, std)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def num_parameters(self) -> int:
        return count_parameters(self)

    def flops_per_sample(self, seq_len: int | None = None, training: bool = False) -> int:
        """Forward FLOPs for one sequence: per layer and token 4 HxH projections, the
        H x I MLP twice, ``2*2*T*H`` attention; the MLM head ``2*H*H + 2*H*V`` per token."""
        c, T = self.config, seq_len or self.config.max_position_embeddings
        H, I = c.hidden_size, c.intermediate_size
        per_token = c.num_hidden_layers * (4 * linear_flops(H, H) + 2 * linear_flops(H, I) + 4 * T * H)
        per_token += linear_flops(H, H) + linear_flops(H, c.vocab_size)
        return scale(per_token * T, training)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None):
        x = self.bert(input_ids, token_type_ids, attention_mask)
        x = self.transform_norm(F.gelu(self.transform(x)))
        logits = self.decoder(x)  # (B, T, V)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)
        return logits, loss
