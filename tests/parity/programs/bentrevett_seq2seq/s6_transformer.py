# bentrevett/pytorch-seq2seq "6 - Attention is All You Need" (MIT): a re-implementation in our
# own words, not a copy. The Transformer built by hand (no `nn.MultiheadAttention`): a
# `MultiHeadAttentionLayer` of four `nn.Linear`s with `.view(batch_size, -1, n_heads,
# head_dim).permute(0, 2, 1, 3)`, `torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale`,
# `energy.masked_fill(mask == 0, -1e10)`, `torch.softmax(energy, dim=-1)`,
# `.permute(0, 2, 1, 3).contiguous()`; position-wise feed-forward; post-norm
# `nn.LayerNorm` residual layers; source masks `(src != pad).unsqueeze(1).unsqueeze(2)` and a
# target mask `pad_mask & causal`, where the causal part is built here from `torch.triu`
# (`~torch.triu(torch.ones(...), diagonal=1).bool()`; the tutorial uses `torch.tril`) and
# the embedding scale is a `register_buffer` (the tutorial moves a tensor attribute with
# `.to(device)`); `model.apply(initialize_weights)` with `nn.init.xavier_uniform_` on every
# weight of more than one dimension, `optim.Adam(lr=0.0005)`, `clip_grad_norm_`,
# `CrossEntropyLoss(ignore_index=PAD)`, perplexity, greedy inference with the attention.
# Changes from the tutorial: a made-up corpus and `collections.Counter` vocabulary (no
# Multi30k/spaCy/torchtext), tiny sizes, 2 epochs, no timing, no checkpoint file.
import math
import random
from collections import Counter

import torch
import torch.nn as nn
import torch.optim as optim

SEED = 1234
random.seed(SEED)
torch.manual_seed(SEED)

WORDS = "a cat dog man woman sees likes small big red blue runs sits".split()
TRANSLATE = {w: w[::-1] + "x" for w in WORDS}
data_rng = random.Random(5)
pairs = []
for _ in range(24):
    src = [data_rng.choice(WORDS) for _ in range(data_rng.randint(3, 6))]
    pairs.append((src, [TRANSLATE[w] for w in reversed(src)]))
train_pairs, valid_pairs = pairs[:16], pairs[16:]
SPECIALS = ["<unk>", "<pad>", "<sos>", "<eos>"]


def build_vocab(sentences):
    counts = Counter(tok for s in sentences for tok in s)
    itos = SPECIALS + [tok for tok, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {tok: i for i, tok in enumerate(itos)}, itos


src_stoi, src_itos = build_vocab(s for s, _ in train_pairs)
trg_stoi, trg_itos = build_vocab(t for _, t in train_pairs)
PAD_IDX = src_stoi["<pad>"]


def numericalize(tokens, stoi):
    return [stoi["<sos>"]] + [stoi.get(t, stoi["<unk>"]) for t in tokens] + [stoi["<eos>"]]


def batches(pair_list, batch_size):
    for i in range(0, len(pair_list), batch_size):
        chunk = pair_list[i:i + batch_size]
        src = [torch.tensor(numericalize(s, src_stoi)) for s, _ in chunk]
        trg = [torch.tensor(numericalize(t, trg_stoi)) for _, t in chunk]
        yield (nn.utils.rnn.pad_sequence(src, batch_first=True, padding_value=PAD_IDX),
               nn.utils.rnn.pad_sequence(trg, batch_first=True, padding_value=PAD_IDX))


class MultiHeadAttentionLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, dropout, device):
        super().__init__()
        assert hid_dim % n_heads == 0
        self.hid_dim = hid_dim
        self.n_heads = n_heads
        self.head_dim = hid_dim // n_heads
        self.fc_q = nn.Linear(hid_dim, hid_dim)
        self.fc_k = nn.Linear(hid_dim, hid_dim)
        self.fc_v = nn.Linear(hid_dim, hid_dim)
        self.fc_o = nn.Linear(hid_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim])).to(device)

    def forward(self, query, key, value, mask=None):
        batch_size = query.shape[0]
        Q = self.fc_q(query)
        K = self.fc_k(key)
        V = self.fc_v(value)
        Q = Q.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        K = K.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        V = V.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = torch.matmul(self.dropout(attention), V)
        x = x.permute(0, 2, 1, 3).contiguous()
        x = x.view(batch_size, -1, self.hid_dim)
        x = self.fc_o(x)
        return x, attention


class PositionwiseFeedforwardLayer(nn.Module):
    def __init__(self, hid_dim, pf_dim, dropout):
        super().__init__()
        self.fc_1 = nn.Linear(hid_dim, pf_dim)
        self.fc_2 = nn.Linear(pf_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.dropout(torch.relu(self.fc_1(x)))
        return self.fc_2(x)


class EncoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.ff_layer_norm = nn.LayerNorm(hid_dim)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_mask):
        _src, _ = self.self_attention(src, src, src, src_mask)
        src = self.self_attn_layer_norm(src + self.dropout(_src))
        _src = self.positionwise_feedforward(src)
        src = self.ff_layer_norm(src + self.dropout(_src))
        return src


class Encoder(nn.Module):
    def __init__(self, input_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=20):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(input_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList([EncoderLayer(hid_dim, n_heads, pf_dim, dropout, device)
                                     for _ in range(n_layers)])
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("scale", torch.sqrt(torch.FloatTensor([hid_dim])))

    def forward(self, src, src_mask):
        batch_size = src.shape[0]
        src_len = src.shape[1]
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        src = self.dropout((self.tok_embedding(src) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            src = layer(src, src_mask)
        return src


class DecoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.enc_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.ff_layer_norm = nn.LayerNorm(hid_dim)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.encoder_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        _trg, _ = self.self_attention(trg, trg, trg, trg_mask)
        trg = self.self_attn_layer_norm(trg + self.dropout(_trg))
        _trg, attention = self.encoder_attention(trg, enc_src, enc_src, src_mask)
        trg = self.enc_attn_layer_norm(trg + self.dropout(_trg))
        _trg = self.positionwise_feedforward(trg)
        trg = self.ff_layer_norm(trg + self.dropout(_trg))
        return trg, attention


class Decoder(nn.Module):
    def __init__(self, output_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=20):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(output_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList([DecoderLayer(hid_dim, n_heads, pf_dim, dropout, device)
                                     for _ in range(n_layers)])
        self.fc_out = nn.Linear(hid_dim, output_dim)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("scale", torch.sqrt(torch.FloatTensor([hid_dim])))

    def forward(self, trg, enc_src, trg_mask, src_mask):
        batch_size = trg.shape[0]
        trg_len = trg.shape[1]
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        trg = self.dropout((self.tok_embedding(trg) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            trg, attention = layer(trg, enc_src, trg_mask, src_mask)
        return self.fc_out(trg), attention


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx, trg_pad_idx, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx
        self.device = device

    def make_src_mask(self, src):
        return (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)

    def make_trg_mask(self, trg):
        trg_pad_mask = (trg != self.trg_pad_idx).unsqueeze(1).unsqueeze(2)
        trg_len = trg.shape[1]
        trg_sub_mask = ~torch.triu(torch.ones((trg_len, trg_len), device=self.device), diagonal=1).bool()
        return trg_pad_mask & trg_sub_mask

    def forward(self, src, trg):
        src_mask = self.make_src_mask(src)
        trg_mask = self.make_trg_mask(trg)
        enc_src = self.encoder(src, src_mask)
        output, attention = self.decoder(trg, enc_src, trg_mask, src_mask)
        return output, attention


device = torch.device("cpu")
enc = Encoder(len(src_itos), 16, 2, 4, 32, 0.1, device)
dec = Decoder(len(trg_itos), 16, 2, 4, 32, 0.1, device)
model = Seq2Seq(enc, dec, PAD_IDX, trg_stoi["<pad>"], device).to(device)


def initialize_weights(m):
    if hasattr(m, "weight") and m.weight.dim() > 1:
        nn.init.xavier_uniform_(m.weight.data)


model.apply(initialize_weights)
print(f"The model has {sum(p.numel() for p in model.parameters() if p.requires_grad):,} trainable parameters")
print(list(model.state_dict())[:4])

optimizer = optim.Adam(model.parameters(), lr=0.0005)
criterion = nn.CrossEntropyLoss(ignore_index=trg_stoi["<pad>"])
losses = []


def run_epoch(pair_list, training):
    model.train(training)
    total, n = 0.0, 0
    for src, trg in batches(pair_list, 4):
        if training:
            optimizer.zero_grad()
        output, _ = model(src, trg[:, :-1])
        output_dim = output.shape[-1]
        output = output.contiguous().view(-1, output_dim)
        trg = trg[:, 1:].contiguous().view(-1)
        loss = criterion(output, trg)
        if training:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1)
            optimizer.step()
            losses.append(loss.item())
        total += loss.item()
        n += 1
    return total / n


for epoch in range(2):
    train_loss = run_epoch(train_pairs, True)
    with torch.no_grad():
        valid_loss = run_epoch(valid_pairs, False)
    print(f"Epoch: {epoch + 1:02}")
    print(f"\tTrain Loss: {train_loss:.6f} | Train PPL: {math.exp(train_loss):7.3f}")
    print(f"\t Val. Loss: {valid_loss:.6f} |  Val. PPL: {math.exp(valid_loss):7.3f}")



def translate_sentence(sentence, model, max_len=10):
    model.eval()
    src_tensor = torch.LongTensor(numericalize(sentence, src_stoi)).unsqueeze(0).to(device)
    src_mask = model.make_src_mask(src_tensor)
    with torch.no_grad():
        enc_src = model.encoder(src_tensor, src_mask)
    trg_indexes = [trg_stoi["<sos>"]]
    for i in range(max_len):
        trg_tensor = torch.LongTensor(trg_indexes).unsqueeze(0).to(device)
        trg_mask = model.make_trg_mask(trg_tensor)
        with torch.no_grad():
            output, attention = model.decoder(trg_tensor, enc_src, trg_mask, src_mask)
        pred_token = output.argmax(2)[:, -1].item()
        trg_indexes.append(pred_token)
        if pred_token == trg_stoi["<eos>"]:
            break
    return [trg_itos[i] for i in trg_indexes], attention


translation, attention = translate_sentence(valid_pairs[0][0], model)
print(translation)
print(attention.shape, attention[0, 0, :2])
