# bentrevett/pytorch-seq2seq "1 - Sequence to Sequence Learning with Neural Networks"
# (1 - Sequence to Sequence Learning with Neural Networks.ipynb; MIT): a re-implementation in
# our own words, not a copy. It keeps the tutorial's structure and torch calls: a
# multi-layer `nn.LSTM` encoder whose last (hidden, cell) starts an LSTM decoder, a
# `Seq2Seq` that fills `torch.zeros(trg_len, batch, vocab)` step by step with teacher forcing
# (`random.random() < teacher_forcing_ratio`), `model.apply(init_weights)` with
# `nn.init.uniform_(param.data, -0.08, 0.08)`, `count_parameters` through `p.numel()`,
# `optim.Adam`, `CrossEntropyLoss(ignore_index=PAD)`, `clip_grad_norm_`, evaluation under
# `torch.no_grad()` with teacher forcing off, `math.exp(loss)` perplexity, saving and
# reloading the best `state_dict`, and a greedy `translate_sentence`.
# Changes from the tutorial: a made-up corpus (Multi30k/spaCy/torchtext are not used), a
# `collections.Counter` vocabulary, tiny sizes, 2 epochs, no timing.
import math
import random
from collections import Counter

import torch
import torch.nn as nn
import torch.optim as optim

SEED = 1234
random.seed(SEED)
torch.manual_seed(SEED)
torch.cuda.manual_seed(SEED)
torch.backends.cudnn.deterministic = True

WORDS = "a cat dog man woman sees likes small big red blue runs sits".split()
TRANSLATE = {w: w[::-1] + "x" for w in WORDS}
data_rng = random.Random(0)
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
    def __init__(self, input_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()
        self.hid_dim = hid_dim
        self.n_layers = n_layers
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, (hidden, cell) = self.rnn(embedded)
        return hidden, cell


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()
        self.output_dim = output_dim
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)
        self.fc_out = nn.Linear(hid_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, cell):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        output, (hidden, cell) = self.rnn(embedded, (hidden, cell))
        prediction = self.fc_out(output.squeeze(0))
        return prediction, hidden, cell


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.device = device
        assert encoder.hid_dim == decoder.rnn.hidden_size, "hidden sizes must match"

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        trg_len, batch_size = trg.shape
        outputs = torch.zeros(trg_len, batch_size, self.decoder.output_dim).to(self.device)
        hidden, cell = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden, cell = self.decoder(input, hidden, cell)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            top1 = output.argmax(1)
            input = trg[t] if teacher_force else top1
        return outputs


device = torch.device("cpu")
enc = Encoder(len(src_itos), 8, 16, 2, 0.5)
dec = Decoder(len(trg_itos), 8, 16, 2, 0.5)
model = Seq2Seq(enc, dec, device).to(device)


def init_weights(m):
    for name, param in m.named_parameters():
        nn.init.uniform_(param.data, -0.08, 0.08)


model.apply(init_weights)
print(model)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


print(f"The model has {count_parameters(model):,} trainable parameters")

optimizer = optim.Adam(model.parameters())
criterion = nn.CrossEntropyLoss(ignore_index=trg_stoi["<pad>"])
losses = []


def train(model, pair_list, optimizer, criterion, clip):
    model.train()
    epoch_loss = 0
    n = 0
    for src, trg in batches(pair_list, 4):
        optimizer.zero_grad()
        output = model(src, trg)
        output_dim = output.shape[-1]
        output = output[1:].view(-1, output_dim)
        trg = trg[1:].view(-1)
        loss = criterion(output, trg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        epoch_loss += loss.item()
        losses.append(loss.item())
        n += 1
    return epoch_loss / n


def evaluate(model, pair_list, criterion):
    model.eval()
    epoch_loss = 0
    n = 0
    with torch.no_grad():
        for src, trg in batches(pair_list, 4):
            output = model(src, trg, 0)
            output_dim = output.shape[-1]
            loss = criterion(output[1:].view(-1, output_dim), trg[1:].view(-1))
            epoch_loss += loss.item()
            n += 1
    return epoch_loss / n


best_valid_loss = float("inf")
for epoch in range(2):
    train_loss = train(model, train_pairs, optimizer, criterion, 1)
    valid_loss = evaluate(model, valid_pairs, criterion)
    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        torch.save(model.state_dict(), "tut1-model.pt")
    print(f"Epoch: {epoch + 1:02}")
    print(f"\tTrain Loss: {train_loss:.6f} | Train PPL: {math.exp(train_loss):7.3f}")
    print(f"\t Val. Loss: {valid_loss:.6f} |  Val. PPL: {math.exp(valid_loss):7.3f}")

model.load_state_dict(torch.load("tut1-model.pt"))
test_loss = evaluate(model, valid_pairs, criterion)
print(f"| Test Loss: {test_loss:.6f} | Test PPL: {math.exp(test_loss):7.3f} |")


def translate_sentence(sentence, model, max_output_length=10):
    model.eval()
    with torch.no_grad():
        ids = torch.LongTensor(numericalize(sentence, src_stoi)).unsqueeze(-1).to(device)
        hidden, cell = model.encoder(ids)
        inputs = [trg_stoi["<sos>"]]
        for _ in range(max_output_length):
            inputs_tensor = torch.LongTensor([inputs[-1]]).to(device)
            output, hidden, cell = model.decoder(inputs_tensor, hidden, cell)
            predicted_token = output.argmax(-1).item()
            inputs.append(predicted_token)
            if predicted_token == trg_stoi["<eos>"]:
                break
    return [trg_itos[i] for i in inputs]


print(translate_sentence(valid_pairs[0][0], model))
