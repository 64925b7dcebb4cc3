# bentrevett/pytorch-sentiment-analysis, the earlier (torchtext-legacy) notebooks "2 - Upgraded
# Sentiment Analysis", "3 - Faster Sentiment Analysis" and "4 - Convolutional Sentiment
# Analysis" (MIT), re-implemented in our own words in one script, not a copy. It keeps
# their torch calls and habits: binary labels with `nn.BCEWithLogitsLoss` and
# `binary_accuracy` through `torch.round(torch.sigmoid(preds))` and `(rounded == y).float()`,
# `predictions = model(text).squeeze(1)`; pretrained-style vectors copied in with
# `model.embedding.weight.data.copy_(...)` and the `<unk>`/`<pad>` rows zeroed by
# `model.embedding.weight.data[UNK_IDX] = torch.zeros(EMBEDDING_DIM)`; a packed
# bidirectional LSTM over time-first text (`pack_padded_sequence(embedded,
# text_lengths.to('cpu'))`, `torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)`);
# FastText over bigrams with `F.avg_pool2d(embedded, (embedded.shape[1], 1)).squeeze(1)`;
# a CNN of `nn.Conv2d(1, n_filters, (fs, embedding_dim))` with `.unsqueeze(1)`,
# `F.relu(conv(embedded)).squeeze(3)` and `F.max_pool1d(conv, conv.shape[2]).squeeze(2)`;
# `optim.Adam`, `model.train()` / `model.eval()` under `torch.no_grad()`, a `predict_sentiment`
# through `torch.sigmoid(model(tensor))`.
# Changes from the notebooks: a made-up corpus and `collections.Counter` vocabulary (no
# IMDB, torchtext or GloVe: the "pretrained" vectors are `torch.randn`), batches in file
# order, tiny sizes, 2 epochs each, no timing.
import random
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

SEED = 1234
random.seed(SEED)
torch.manual_seed(SEED)

GOOD = "great fun superb lovely moving brilliant".split()
BAD = "awful dull boring terrible weak messy".split()
OTHER = "the film movie plot actor was and very story it".split()
text_rng = random.Random(7)


def make_review():
    n_good, n_bad = text_rng.randint(0, 3), text_rng.randint(0, 3)
    words = ([text_rng.choice(GOOD) for _ in range(n_good)] + [text_rng.choice(BAD) for _ in range(n_bad)]
             + [text_rng.choice(OTHER) for _ in range(text_rng.randint(2, 5))])
    text_rng.shuffle(words)
    return words, float(n_good > n_bad)


train_data = [make_review() for _ in range(24)]
valid_data = [make_review() for _ in range(8)]


def generate_bigrams(x):
    n_grams = set(zip(*[x[i:] for i in range(2)]))
    for n_gram in sorted(n_grams):
        x.append(" ".join(n_gram))
    return x


counts = Counter(tok for words, _ in train_data for tok in generate_bigrams(list(words)))
itos = ["<unk>", "<pad>"] + sorted(counts)
stoi = {tok: i for i, tok in enumerate(itos)}
UNK_IDX, PAD_IDX = stoi["<unk>"], stoi["<pad>"]
EMBEDDING_DIM = 6
pretrained_embeddings = torch.randn(len(itos), EMBEDDING_DIM)


def batches(data, batch_size, bigrams=False, min_len=1):
    for i in range(0, len(data), batch_size):
        chunk = data[i:i + batch_size]
        toks = [generate_bigrams(list(w)) if bigrams else list(w) for w, _ in chunk]
        ids = [[stoi.get(t, UNK_IDX) for t in ts] + [PAD_IDX] * max(0, min_len - len(ts)) for ts in toks]
        lengths = torch.tensor([len(x) for x in ids])
        text = nn.utils.rnn.pad_sequence([torch.tensor(x) for x in ids], padding_value=PAD_IDX)
        yield text, lengths, torch.tensor([y for _, y in chunk])


class RNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers, bidirectional, dropout, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.rnn = nn.LSTM(embedding_dim, hidden_dim, num_layers=n_layers, bidirectional=bidirectional,
                           dropout=dropout)
        self.fc = nn.Linear(hidden_dim * 2, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text, text_lengths):
        embedded = self.dropout(self.embedding(text))
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, text_lengths.to("cpu"), enforce_sorted=False)
        packed_output, (hidden, cell) = self.rnn(packed_embedded)
        output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output)
        hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
        return self.fc(hidden)


class FastText(nn.Module):
    def __init__(self, vocab_size, embedding_dim, output_dim, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.fc = nn.Linear(embedding_dim, output_dim)

    def forward(self, text, text_lengths):
        embedded = self.embedding(text)
        embedded = embedded.permute(1, 0, 2)
        pooled = F.avg_pool2d(embedded, (embedded.shape[1], 1)).squeeze(1)
        return self.fc(pooled)


class CNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, n_filters, filter_sizes, output_dim, dropout, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.convs = nn.ModuleList([nn.Conv2d(in_channels=1, out_channels=n_filters, kernel_size=(fs, embedding_dim))
                                    for fs in filter_sizes])
        self.fc = nn.Linear(len(filter_sizes) * n_filters, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text, text_lengths):
        text = text.permute(1, 0)
        embedded = self.embedding(text)
        embedded = embedded.unsqueeze(1)
        conved = [F.relu(conv(embedded)).squeeze(3) for conv in self.convs]
        pooled = [F.max_pool1d(conv, conv.shape[2]).squeeze(2) for conv in conved]
        cat = self.dropout(torch.cat(pooled, dim=1))
        return self.fc(cat)


def binary_accuracy(preds, y):
    rounded_preds = torch.round(torch.sigmoid(preds))
    correct = (rounded_preds == y).float()
    return correct.sum() / len(correct)


def train(model, iterator, optimizer, criterion):
    epoch_loss, epoch_acc, n = 0, 0, 0
    model.train()
    for text, text_lengths, label in iterator:
        optimizer.zero_grad()
        predictions = model(text, text_lengths).squeeze(1)
        loss = criterion(predictions, label)
        acc = binary_accuracy(predictions, label)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
        epoch_acc += acc.item()
        n += 1
    return epoch_loss / n, epoch_acc / n


def evaluate(model, iterator, criterion):
    epoch_loss, epoch_acc, n = 0, 0, 0
    model.eval()
    with torch.no_grad():
        for text, text_lengths, label in iterator:
            predictions = model(text, text_lengths).squeeze(1)
            epoch_loss += criterion(predictions, label).item()
            epoch_acc += binary_accuracy(predictions, label).item()
            n += 1
    return epoch_loss / n, epoch_acc / n


def predict_sentiment(model, words, bigrams=False, min_len=4):
    model.eval()
    tokens = generate_bigrams(list(words)) if bigrams else list(words)
    indexed = [stoi.get(t, UNK_IDX) for t in tokens]
    if len(indexed) < min_len:
        indexed += [PAD_IDX] * (min_len - len(indexed))
    tensor = torch.LongTensor(indexed).unsqueeze(1)
    length_tensor = torch.LongTensor([len(indexed)])
    prediction = torch.sigmoid(model(tensor, length_tensor))
    return prediction.item()


models = {
    "rnn": (RNN(len(itos), EMBEDDING_DIM, 5, 1, 2, True, 0.5, PAD_IDX), False, 1),
    "fasttext": (FastText(len(itos), EMBEDDING_DIM, 1, PAD_IDX), True, 1),
    "cnn": (CNN(len(itos), EMBEDDING_DIM, 3, [2, 3], 1, 0.5, PAD_IDX), False, 3),
}
history = []
for name, (model, bigrams, min_len) in models.items():
    print(f"The model has {sum(p.numel() for p in model.parameters() if p.requires_grad):,} trainable parameters")
    print(pretrained_embeddings.shape)
    model.embedding.weight.data.copy_(pretrained_embeddings)
    model.embedding.weight.data[UNK_IDX] = torch.zeros(EMBEDDING_DIM)
    model.embedding.weight.data[PAD_IDX] = torch.zeros(EMBEDDING_DIM)
    print(model.embedding.weight.data[:3, :3])
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.BCEWithLogitsLoss()
    for epoch in range(2):
        train_loss, train_acc = train(model, batches(train_data, 6, bigrams, min_len), optimizer, criterion)
        valid_loss, valid_acc = evaluate(model, batches(valid_data, 4, bigrams, min_len), criterion)
        history.append((train_loss, valid_loss))
        print(f"Epoch: {epoch + 1:02}")
        print(f"\tTrain Loss: {train_loss:.6f} | Train Acc: {train_acc * 100:.2f}%")
        print(f"\t Val. Loss: {valid_loss:.6f} |  Val. Acc: {valid_acc * 100:.2f}%")
    print(f"{predict_sentiment(model, ['a', 'great', 'brilliant', 'film'], bigrams):.6f}")
    print(f"{predict_sentiment(model, ['boring', 'and', 'awful'], bigrams):.6f}")
