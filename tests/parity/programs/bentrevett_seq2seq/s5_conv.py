# bentrevett/pytorch-seq2seq "5 - Convolutional Sequence to Sequence Learning" (MIT): a
# re-implementation in our own words, not a copy. It keeps the tutorial's torch calls:
# batch-first token + position embeddings (`torch.arange(0, src_len).unsqueeze(0).repeat(
# batch_size, 1)`), `nn.Conv1d(hid_dim, 2 * hid_dim, kernel_size, padding=(kernel_size - 1) // 2)`
# blocks with `F.glu(conved, dim=1)` and residuals scaled by
# `torch.sqrt(torch.FloatTensor([0.5]))`, the decoder's causal left padding
# `torch.zeros(...).fill_(self.trg_pad_idx)` + `torch.cat(..., dim=2)`, attention by
# `torch.matmul` and `F.softmax(energy, dim=2)`, the shifted targets
# `output.contiguous().view(-1, output_dim)` / `trg[:, 1:].contiguous().view(-1)`,
# `clip_grad_norm_`, `CrossEntropyLoss(ignore_index=PAD)`, perplexity, greedy inference.
# Changes from the tutorial: a made-up corpus and `collections.Counter` vocabulary (no
# Multi30k/spaCy/torchtext), tiny sizes, 2 epochs, no timing, no checkpoint file.
import math
import random
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

SEED = 1234
random.seed(SEED)
torch.manual_seed(SEED)

WORDS = "a cat dog man woman sees likes small big red blue runs sits".split()
TRANSLATE = {w: w[::-1] + "x" for w in WORDS}
data_rng = random.Random(4)
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


class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, n_layers, kernel_size, dropout, device, max_length=20):
        super().__init__()
        assert kernel_size % 2 == 1, "Kernel size must be odd!"
        self.device = device
        self.scale = torch.sqrt(torch.FloatTensor([0.5])).to(device)
        self.tok_embedding = nn.Embedding(input_dim, emb_dim)
        self.pos_embedding = nn.Embedding(max_length, emb_dim)
        self.emb2hid = nn.Linear(emb_dim, hid_dim)
        self.hid2emb = nn.Linear(hid_dim, emb_dim)
        self.convs = nn.ModuleList([nn.Conv1d(in_channels=hid_dim, out_channels=2 * hid_dim,
                                              kernel_size=kernel_size, padding=(kernel_size - 1) // 2)
                                    for _ in range(n_layers)])
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        batch_size = src.shape[0]
        src_len = src.shape[1]
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        embedded = self.dropout(self.tok_embedding(src) + self.pos_embedding(pos))
        conv_input = self.emb2hid(embedded).permute(0, 2, 1)
        for conv in self.convs:
            conved = conv(self.dropout(conv_input))
            conved = F.glu(conved, dim=1)
            conved = (conved + conv_input) * self.scale
            conv_input = conved
        conved = self.hid2emb(conved.permute(0, 2, 1))
        combined = (conved + embedded) * self.scale
        return conved, combined


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, n_layers, kernel_size, dropout, trg_pad_idx, device,
                 max_length=20):
        super().__init__()
        self.kernel_size = kernel_size
        self.trg_pad_idx = trg_pad_idx
        self.device = device
        self.scale = torch.sqrt(torch.FloatTensor([0.5])).to(device)
        self.tok_embedding = nn.Embedding(output_dim, emb_dim)
        self.pos_embedding = nn.Embedding(max_length, emb_dim)
        self.emb2hid = nn.Linear(emb_dim, hid_dim)
        self.hid2emb = nn.Linear(hid_dim, emb_dim)
        self.attn_hid2emb = nn.Linear(hid_dim, emb_dim)
        self.attn_emb2hid = nn.Linear(emb_dim, hid_dim)
        self.fc_out = nn.Linear(emb_dim, output_dim)
        self.convs = nn.ModuleList([nn.Conv1d(in_channels=hid_dim, out_channels=2 * hid_dim,
                                              kernel_size=kernel_size) for _ in range(n_layers)])
        self.dropout = nn.Dropout(dropout)

    def calculate_attention(self, embedded, conved, encoder_conved, encoder_combined):
        conved_emb = self.attn_hid2emb(conved.permute(0, 2, 1))
        combined = (conved_emb + embedded) * self.scale
        energy = torch.matmul(combined, encoder_conved.permute(0, 2, 1))
        attention = F.softmax(energy, dim=2)
        attended_encoding = torch.matmul(attention, encoder_combined)
        attended_encoding = self.attn_emb2hid(attended_encoding)
        attended_combined = (conved + attended_encoding.permute(0, 2, 1)) * self.scale
        return attention, attended_combined

    def forward(self, trg, encoder_conved, encoder_combined):
        batch_size = trg.shape[0]
        trg_len = trg.shape[1]
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        embedded = self.dropout(self.tok_embedding(trg) + self.pos_embedding(pos))
        conv_input = self.emb2hid(embedded).permute(0, 2, 1)
        batch_size = conv_input.shape[0]
        hid_dim = conv_input.shape[1]
        for conv in self.convs:
            conv_input = self.dropout(conv_input)
            padding = torch.zeros(batch_size, hid_dim, self.kernel_size - 1).fill_(self.trg_pad_idx).to(self.device)
            padded_conv_input = torch.cat((padding, conv_input), dim=2)
            conved = conv(padded_conv_input)
            conved = F.glu(conved, dim=1)
            attention, conved = self.calculate_attention(embedded, conved, encoder_conved, encoder_combined)
            conved = (conved + conv_input) * self.scale
            conv_input = conved
        conved = self.hid2emb(conved.permute(0, 2, 1))
        output = self.fc_out(self.dropout(conved))
        return output, attention


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg):
        encoder_conved, encoder_combined = self.encoder(src)
        output, attention = self.decoder(trg, encoder_conved, encoder_combined)
        return output, attention


device = torch.device("cpu")
enc = Encoder(len(src_itos), 8, 16, 2, 3, 0.25, device)
dec = Decoder(len(trg_itos), 8, 16, 2, 3, 0.25, PAD_IDX, device)
model = Seq2Seq(enc, dec).to(device)
print(model)
print(f"The model has {sum(p.numel() for p in model.parameters() if p.requires_grad):,} trainable parameters")

optimizer = optim.Adam(model.parameters(), lr=0.005)
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
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
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
    with torch.no_grad():
        encoder_conved, encoder_combined = model.encoder(src_tensor)
    trg_indexes = [trg_stoi["<sos>"]]
    for i in range(max_len):
        trg_tensor = torch.LongTensor(trg_indexes).unsqueeze(0).to(device)
        with torch.no_grad():
            output, attention = model.decoder(trg_tensor, encoder_conved, encoder_combined)
        pred_token = output.argmax(2)[:, -1].item()
        trg_indexes.append(pred_token)
        if pred_token == trg_stoi["<eos>"]:
            break
    return [trg_itos[i] for i in trg_indexes], attention


translation, attention = translate_sentence(valid_pairs[0][0], model)
print(translation)
print(attention[0, :2])
