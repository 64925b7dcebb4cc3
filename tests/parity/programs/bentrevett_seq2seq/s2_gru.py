# bentrevett/pytorch-seq2seq "2 - Learning Phrase Representations using RNN Encoder-Decoder"
# (MIT): a re-implementation in our own words, not a copy. It keeps the tutorial's torch
# calls: a one-layer `nn.GRU` encoder whose final hidden state is the context vector fed to
# every decoder step (`torch.cat((embedded, context), dim=2)` into the GRU and
# `torch.cat((embedded.squeeze(0), hidden.squeeze(0), context.squeeze(0)), dim=1)` into the
# output layer), `nn.init.normal_(param.data, mean=0, std=0.01)` through `model.apply`,
# teacher forcing, `clip_grad_norm_`, `CrossEntropyLoss(ignore_index=PAD)`, perplexity.
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
data_rng = random.Random(1)
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
        yield (nn.utils.rnn.pad_sequence(src, padding_value=PAD_IDX),
               nn.utils.rnn.pad_sequence(trg, padding_value=PAD_IDX))


class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, dropout):
        super().__init__()
        self.hid_dim = hid_dim
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, hidden = self.rnn(embedded)
        return hidden


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, dropout):
        super().__init__()
        self.hid_dim = hid_dim
        self.output_dim = output_dim
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim + hid_dim, hid_dim)
        self.fc_out = nn.Linear(emb_dim + hid_dim * 2, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, context):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        emb_con = torch.cat((embedded, context), dim=2)
        output, hidden = self.rnn(emb_con, hidden)
        output = torch.cat((embedded.squeeze(0), hidden.squeeze(0), context.squeeze(0)), dim=1)
        prediction = self.fc_out(output)
        return prediction, hidden


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        batch_size = trg.shape[1]
        trg_len = trg.shape[0]
        outputs = torch.zeros(trg_len, batch_size, self.decoder.output_dim).to(self.device)
        context = self.encoder(src)
        hidden = context
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden = self.decoder(input, hidden, context)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            input = trg[t] if teacher_force else output.argmax(1)
        return outputs


device = torch.device("cpu")
model = Seq2Seq(Encoder(len(src_itos), 8, 16, 0.5), Decoder(len(trg_itos), 8, 16, 0.5), device).to(device)


def init_weights(m):
    for name, param in m.named_parameters():
        nn.init.normal_(param.data, mean=0, std=0.01)


model.apply(init_weights)
print(model)
print(f"The model has {sum(p.numel() for p in model.parameters() if p.requires_grad):,} trainable parameters")

optimizer = optim.Adam(model.parameters(), lr=0.01)
criterion = nn.CrossEntropyLoss(ignore_index=trg_stoi["<pad>"])
losses = []


def run_epoch(pair_list, training):
    model.train(training)
    total, n = 0.0, 0
    for src, trg in batches(pair_list, 4):
        if training:
            optimizer.zero_grad()
            output = model(src, trg)
        else:
            output = model(src, trg, 0)
        output_dim = output.shape[-1]
        loss = criterion(output[1:].view(-1, output_dim), trg[1:].view(-1))
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
