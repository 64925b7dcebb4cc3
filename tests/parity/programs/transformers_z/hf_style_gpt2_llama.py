"""A GPT-2 and a Llama written the way HuggingFace transformers writes its pure-torch modeling
files (huggingface/transformers ``src/transformers/models/gpt2/modeling_gpt2.py``,
``models/bert/modeling_bert.py``, ``models/llama/modeling_llama.py``, ``generation/logits_process.py``).

This is a re-implementation in our own words, not a copy: no ``transformers`` import; it uses
the same torch calls and habits -- a ``dataclass`` config, ``Conv1D`` through ``torch.addmm``,
a causal ``bias`` buffer registered with ``persistent=False``, masks from
``torch.finfo(dtype).min`` applied by ``torch.where`` / ``masked_fill``, scores by
``torch.baddbmm``, ``self.apply(self._init_weights)`` dispatching on ``isinstance``,
``nn.Embedding(padding_idx=...)``, tied input/output embeddings, a ``ModuleList`` of blocks,
past key/values concatenated along time, ``output_attentions`` tuples, gradient checkpointing
by ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``, rotary embeddings from a
``torch.outer`` cos/sin cache, ``F.scaled_dot_product_attention(attn_mask=...)``, and greedy
and top-k/top-p sampling (``topk``, ``sort``, ``cumsum``, ``softmax``, ``multinomial``,
``scatter``). Tiny sizes and synthetic token ids made here.
"""
import math
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn


@dataclass
class TinyConfig:
    vocab_size: int = 23
    n_positions: int = 16
    n_embd: int = 16
    n_layer: int = 2
    n_head: int = 4
    pad_token_id: int = 0
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    resid_pdrop: float = 0.0
    attn_pdrop: float = 0.0
    rope_theta: float = 10000.0
    intermediate_size: int = 40
    rms_norm_eps: float = 1e-6


class Conv1D(nn.Module):
    """GPT-2's linear layer with its weight stored transposed (in_features, out_features)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        out_shape = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(out_shape)


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        n = config.n_positions
        self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n),
                             persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.num_heads * self.head_dim,))

    def _attn(self, query, key, value, attention_mask=None):
        bsz, num_heads, q_len, dk = query.size()
        k_len = key.size(-2)
        # baddbmm with beta=0 as the upcast path does: scores = alpha * q @ k^T
        scores = torch.empty(bsz * num_heads, q_len, k_len, dtype=query.dtype)
        q = query.reshape(-1, q_len, dk)
        k = key.transpose(-1, -2).reshape(-1, dk, k_len)
        scores = torch.baddbmm(scores, q, k, beta=0, alpha=1.0 / math.sqrt(dk))
        attn_weights = scores.reshape(bsz, num_heads, q_len, k_len)
        causal_mask = self.bias[:, :, k_len - q_len:k_len, :k_len]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False,
                output_attentions=False):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        present = (key, value) if use_cache is True else None
        attn_output, attn_weights = self._attn(query, key, value, attention_mask)
        attn_output = self.resid_dropout(self.c_proj(self._merge_heads(attn_output)))
        outputs = (attn_output, present)
        if output_attentions:
            outputs += (attn_weights,)
        return outputs


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, intermediate_size)
        self.act = nn.GELU(approximate="tanh")
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(4 * config.n_embd, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False,
                output_attentions=False):
        residual = hidden_states
        attn_outputs = self.attn(self.ln_1(hidden_states), layer_past=layer_past,
                                 attention_mask=attention_mask, use_cache=use_cache,
                                 output_attentions=output_attentions)
        hidden_states = attn_outputs[0] + residual
        residual = hidden_states
        hidden_states = residual + self.mlp(self.ln_2(hidden_states))
        if use_cache:
            return (hidden_states,) + attn_outputs[1:]
        return (hidden_states,) + attn_outputs[2:]


class GPT2LMHeadModel(nn.Module):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd, padding_idx=config.pad_token_id)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([GPT2Block(config, layer_idx=i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.gradient_checkpointing = False
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                p.data.normal_(mean=0.0, std=config.initializer_range / math.sqrt(2 * config.n_layer))
        self.lm_head.weight = self.wte.weight  # tie

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, Conv1D)):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def gradient_checkpointing_enable(self):
        self.gradient_checkpointing = True

    def forward(self, input_ids, past_key_values=None, attention_mask=None, labels=None,
                use_cache=False, output_attentions=False):
        batch_size, seq_len = input_ids.size()
        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0].size(-2)
        position_ids = torch.arange(past_length, seq_len + past_length, dtype=torch.long)
        position_ids = position_ids.unsqueeze(0)
        if attention_mask is not None:
            attention_mask = attention_mask.view(batch_size, -1)
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=self.wte.weight.dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(self.wte.weight.dtype).min
        hidden_states = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        presents = () if use_cache else None
        all_attentions = () if output_attentions else None
        for block, layer_past in zip(self.h, past_key_values):
            if self.gradient_checkpointing and self.training:
                outputs = torch.utils.checkpoint.checkpoint(
                    block.__call__, hidden_states, None, attention_mask, False, output_attentions,
                    use_reentrant=False)
            else:
                outputs = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                use_cache=use_cache, output_attentions=output_attentions)
            hidden_states = outputs[0]
            if use_cache is True:
                presents = presents + (outputs[1],)
            if output_attentions:
                all_attentions = all_attentions + (outputs[2 if use_cache else 1],)
        hidden_states = self.ln_f(hidden_states)
        lm_logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
            shift_logits = lm_logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = nn.CrossEntropyLoss()(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return tuple(v for v in (loss, lm_logits, presents, all_attentions) if v is not None)


# -- Llama -----------------------------------------------------------------------------------

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_position_embeddings, dtype=torch.int64).type_as(self.inv_freq)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x, position_ids):
        return self.cos_cached[position_ids].to(x.dtype), self.sin_cached[position_ids].to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.n_head
        self.num_key_value_heads = config.n_head // 2
        self.head_dim = config.n_embd // config.n_head
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.q_proj = nn.Linear(config.n_embd, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.n_embd, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.n_embd, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.n_embd, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)
        out = F.scaled_dot_product_attention(q.contiguous(), k.contiguous(), v.contiguous(),
                                             attn_mask=attention_mask, dropout_p=0.0)
        out = out.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out)


class LlamaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.n_embd, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.n_embd, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.n_embd, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.n_embd, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.n_embd, eps=config.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        residual = hidden_states
        hidden_states = residual + self.self_attn(self.input_layernorm(hidden_states), position_embeddings,
                                                  attention_mask)
        residual = hidden_states
        return residual + self.mlp(self.post_attention_layernorm(hidden_states))


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.n_embd, config.pad_token_id)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config) for _ in range(config.n_layer)])
        self.norm = LlamaRMSNorm(config.n_embd, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config.n_embd // config.n_head, config.n_positions,
                                               base=config.rope_theta)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.gradient_checkpointing = False
        self.apply(self._init_weights)

    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def _update_causal_mask(self, attention_mask, input_tensor):
        dtype = input_tensor.dtype
        min_dtype = torch.finfo(dtype).min
        seq_len = input_tensor.shape[1]
        causal_mask = torch.full((seq_len, seq_len), fill_value=min_dtype, dtype=dtype)
        causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.clone()
            padding_mask = causal_mask + attention_mask[:, None, None, :]
            padding_mask = padding_mask == 0
            causal_mask = causal_mask.masked_fill(padding_mask, min_dtype)
            # rows that attend to nothing (left padding) attend to everything instead, as
            # transformers' ``_unmask_unattended`` does for SDPA: torch's fused CPU kernel
            # differentiates an all-``finfo.min`` row as if each weight were 1, not 1/n
            causal_mask = causal_mask.mul(~torch.all(causal_mask == min_dtype, dim=-1, keepdim=True))
        return causal_mask

    def forward(self, input_ids, attention_mask=None, labels=None):
        inputs_embeds = self.embed_tokens(input_ids)
        position_ids = torch.arange(input_ids.shape[1]).unsqueeze(0)
        causal_mask = self._update_causal_mask(attention_mask, inputs_embeds)
        position_embeddings = self.rotary_emb(inputs_embeds, position_ids)
        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden_states = torch.utils.checkpoint.checkpoint(
                    decoder_layer, hidden_states, position_embeddings, causal_mask, use_reentrant=False)
            else:
                hidden_states = decoder_layer(hidden_states, position_embeddings, causal_mask)
        logits = self.lm_head(self.norm(hidden_states)).float()
        loss = None
        if labels is not None:
            logits_ = logits[..., :-1, :].contiguous().view(-1, self.config.vocab_size)
            labels_ = labels[..., 1:].contiguous().view(-1)
            loss = F.cross_entropy(logits_, labels_, ignore_index=-100)
        return loss, logits


# -- generation ------------------------------------------------------------------------------

def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf"), min_tokens_to_keep=1):
    if top_k > 0:
        top_k = min(max(top_k, min_tokens_to_keep), logits.size(-1))
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(indices_to_remove, filter_value)
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
        sorted_indices_to_remove[..., -min_tokens_to_keep:] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits = logits.masked_fill(indices_to_remove, filter_value)
    return logits


@torch.no_grad()
def generate_greedy(model, input_ids, max_new_tokens):
    out, past = model(input_ids, use_cache=True)[0:2]
    next_token = out[:, -1, :].argmax(dim=-1, keepdim=True)
    generated = torch.cat([input_ids, next_token], dim=-1)
    for _ in range(max_new_tokens - 1):
        logits, past = model(next_token, past_key_values=past, use_cache=True)[0:2]
        next_token = torch.argmax(logits[:, -1, :], dim=-1).unsqueeze(-1)
        generated = torch.cat([generated, next_token], dim=-1)
    return generated


@torch.no_grad()
def generate_sample(model, input_ids, max_new_tokens, top_k, top_p, temperature=0.8):
    for _ in range(max_new_tokens):
        logits = model(input_ids)[0][:, -1, :] / temperature
        logits = top_k_top_p_filtering(logits, top_k=top_k, top_p=top_p)
        probs = nn.functional.softmax(logits, dim=-1)
        next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
    return input_ids


def main():
    torch.manual_seed(0)
    config = TinyConfig()
    model = GPT2LMHeadModel(config)
    print(model)
    print(sorted(model.state_dict().keys())[:6], len(model.state_dict()))
    print("tied:", model.lm_head.weight is model.wte.weight, model.wte.weight[0].abs().sum().item())
    print("buffers:", [n for n, _ in model.named_buffers()][:2])
    n_params = sum(p.numel() for p in model.parameters())
    print(f"number of parameters: {n_params}")

    ids = torch.randint(1, config.vocab_size, (3, 10))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    ids[0, :3] = config.pad_token_id
    loss, logits, attns = model(ids, attention_mask=mask, labels=ids, output_attentions=True)
    print(f"loss {loss.item():.6f} logits {tuple(logits.shape)} attn {len(attns)} {tuple(attns[0].shape)}")
    print(f"attn row sums {attns[1].sum(-1).mean().item():.5f}", attns[0].dtype, attns[0].requires_grad)

    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    model.train()
    model.gradient_checkpointing_enable()
    for step in range(4):
        loss = model(ids, attention_mask=mask, labels=ids)[0]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print(f"gpt2 step {step}: loss {loss.item():.6f} grad norm {norm.item():.6f}")
    print("pad row after training:", model.wte.weight[config.pad_token_id].abs().max().item())

    model.eval()
    prompt = torch.randint(1, config.vocab_size, (2, 4))
    full = model(prompt)[0]
    _, past = model(prompt[:, :3], use_cache=True)[0:2]
    step_logits = model(prompt[:, 3:], past_key_values=past, use_cache=True)[0]
    print("cache matches:", torch.allclose(full[:, -1], step_logits[:, -1], atol=1e-5))
    print("greedy:", generate_greedy(model, prompt, 5).tolist())
    print("sampled:", generate_sample(model, prompt, 5, top_k=8, top_p=0.9).tolist())
    filtered = top_k_top_p_filtering(torch.randn(2, 12), top_k=5, top_p=0.8)
    print("kept per row:", torch.isfinite(filtered).sum(-1).tolist())

    torch.manual_seed(1)
    llama = LlamaForCausalLM(config)
    print(llama)
    print(list(llama.state_dict().keys())[:5], len(llama.state_dict()))
    lmask = torch.ones(3, 10, dtype=torch.long)
    lmask[2, :2] = 0
    labels = ids.clone()
    labels[lmask == 0] = -100
    opt = torch.optim.AdamW(llama.parameters(), lr=3e-3)
    llama.gradient_checkpointing = True
    for step in range(4):
        loss, logits = llama(ids, attention_mask=lmask, labels=labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"llama step {step}: loss {loss.item():.6f} logits mean {logits.mean().item():.6f}")
    print(llama.rotary_emb.cos_cached.shape, llama.rotary_emb.inv_freq)

    # save_pretrained-style round trip: non-persistent buffers stay out, tied keys both in
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "pytorch_model.bin")
        torch.save(model.state_dict(), path)
        state = torch.load(path, map_location="cpu", weights_only=True)
        fresh = GPT2LMHeadModel(config)
        print(fresh.load_state_dict(state, strict=False))
        del state["lm_head.weight"]
        print(fresh.load_state_dict(state, strict=False))
        fresh.lm_head.weight = fresh.wte.weight
        fresh.eval()
        print("reloaded equal:", torch.equal(fresh(prompt)[0], model(prompt)[0]))


if __name__ == "__main__":
    main()
