# bentrevett/pytorch-seq2seq "3 - Neural Machine Translation by Jointly Learning to Align and
# Translate" (MIT): a re-implementation in our own words, not a copy. It keeps the
# tutorial's torch calls: a bidirectional `nn.GRU` encoder whose two last states go through
# `torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))`; Bahdanau
# attention (`hidden.unsqueeze(1).repeat(1, src_len, 1)`, `encoder_outputs.permute(1, 0, 2)`,
# `self.v` without bias, `.squeeze(2)`, `F.softmax(attention, dim=1)`), the weighted context
# by `torch.bmm`, the decoder's `assert (output == hidden).all()`, init by parameter name
# (`nn.init.normal_` on weights, `nn.init.constant_(param.data, 0)` on biases), teacher
# forcing, `clip_grad_norm_`, `CrossEntropyLoss(ignore_index=PAD)`, perplexity.
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
data_rng = random.Random(2)
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
    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, hidden = self.rnn(embedded)
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        src_len = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)
        return F.softmax(attention, dim=1)


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        a = self.attention(hidden, encoder_outputs).unsqueeze(1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        weighted = torch.bmm(a, encoder_outputs).permute(1, 0, 2)
        rnn_input = torch.cat((embedded, weighted), dim=2)
        output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
        assert (output == hidden).all()
        embedded = embedded.squeeze(0)
        output = output.squeeze(0)
        weighted = weighted.squeeze(0)
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
        return prediction, hidden.squeeze(0), a.squeeze(1)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        batch_size = src.shape[1]
        trg_len = trg.shape[0]
        outputs = torch.zeros(trg_len, batch_size, self.decoder.output_dim).to(self.device)
        encoder_outputs, hidden = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden, _ = self.decoder(input, hidden, encoder_outputs)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            top1 = output.argmax(1)
            input = trg[t] if teacher_force else top1
        return outputs


device = torch.device("cpu")
attn = Attention(8, 8)
enc = Encoder(len(src_itos), 6, 8, 8, 0.5)
dec = Decoder(len(trg_itos), 6, 8, 8, 0.5, attn)
model = Seq2Seq(enc, dec, device).to(device)


def init_weights(m):
    for name, param in m.named_parameters():
        if "weight" in name:
            nn.init.normal_(param.data, mean=0, std=0.01)
        else:
            nn.init.constant_(param.data, 0)


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


def translate_sentence(sentence, model, max_len=10):
    model.eval()
    with torch.no_grad():
        src_tensor = torch.LongTensor(numericalize(sentence, src_stoi)).unsqueeze(1).to(device)
        encoder_outputs, hidden = model.encoder(src_tensor)
        trg_indexes = [trg_stoi["<sos>"]]
        attentions = torch.zeros(max_len, 1, len(sentence) + 2).to(device)
        for i in range(max_len):
            trg_tensor = torch.LongTensor([trg_indexes[-1]]).to(device)
            output, hidden, attention = model.decoder(trg_tensor, hidden, encoder_outputs)
            attentions[i] = attention
            pred_token = output.argmax(1).item()
            trg_indexes.append(pred_token)
            if pred_token == trg_stoi["<eos>"]:
                break
    return [trg_itos[i] for i in trg_indexes], attentions[:len(trg_indexes) - 1]


translation, attention = translate_sentence(valid_pairs[0][0], model)
print(translation)
print(attention.squeeze(1)[:2])
