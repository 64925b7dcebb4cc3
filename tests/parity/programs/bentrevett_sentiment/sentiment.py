# bentrevett/pytorch-sentiment-analysis (the current, `datasets`-based version; MIT):
# notebooks "1 - Neural Bag of Words", "2 - Recurrent Neural Networks" and "3 -
# Convolutional Neural Networks", re-implemented in our own words in one script, not a
# copy. It keeps their torch calls and habits: a tokenized corpus numericalized through a
# vocabulary with `<unk>`/`<pad>` (built here with `collections.Counter`, min_freq 2), items
# as dicts of tensors, a `collate_fn` with `nn.utils.rnn.pad_sequence(batch_first=True)` and
# `torch.stack` for labels/lengths, `DataLoader(shuffle=True)` for training; the models:
# NBoW (`nn.Embedding(padding_idx=pad_index)` then `.mean(dim=1)`), a bidirectional
# 2-layer `nn.LSTM(batch_first=True)` over `pack_padded_sequence(embedded, length,
# batch_first=True, enforce_sorted=False)` / `pad_packed_sequence` with
# `torch.cat([hidden[-1], hidden[-2]], dim=-1)`, and a CNN of `nn.Conv1d` over
# `embedded.permute(0, 2, 1)`, `torch.relu`, `conv.max(dim=-1).values`, `torch.cat`;
# `model.apply(initialize_weights)` (`xavier_normal_`, `zeros_`, `orthogonal_` on LSTM
# weights, `kaiming_normal_(nonlinearity="relu")` on convolutions), `optim.Adam`,
# `nn.CrossEntropyLoss`, `get_accuracy` through `argmax(dim=-1).eq(label).sum() /
# batch_size`, `np.mean` of the epoch's `.item()`s, the best `state_dict` saved and
# reloaded, and `predict_sentiment` through `torch.softmax`.
# Changes from the notebooks: a made-up corpus (no IMDB `datasets`, no torchtext, no
# pretrained GloVe vectors), tiny sizes, 2 epochs each, no tqdm, no plots.
import collections
import random

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

seed = 1234
np.random.seed(seed)
torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cudnn.deterministic = True

GOOD = "great fun superb lovely moving brilliant".split()
BAD = "awful dull boring terrible weak messy".split()
OTHER = "the film movie plot actor was and very story it".split()
text_rng = random.Random(0)


def make_review():
    n_good, n_bad = text_rng.randint(0, 3), text_rng.randint(0, 3)
    words = ([text_rng.choice(GOOD) for _ in range(n_good)] + [text_rng.choice(BAD) for _ in range(n_bad)]
             + [text_rng.choice(OTHER) for _ in range(text_rng.randint(2, 5))])
    text_rng.shuffle(words)
    return " ".join(words), int(n_good > n_bad)


train_data = [make_review() for _ in range(32)]
test_data = [make_review() for _ in range(12)]


def tokenizer(text):
    return text.lower().split()


special_tokens = ["<unk>", "<pad>"]
counter = collections.Counter(tok for text, _ in train_data for tok in tokenizer(text))
itos = special_tokens + sorted(tok for tok, n in counter.items() if n >= 2)
stoi = {tok: i for i, tok in enumerate(itos)}
unk_index, pad_index = stoi["<unk>"], stoi["<pad>"]


def lookup_indices(tokens):
    return [stoi.get(tok, unk_index) for tok in tokens]


def numericalize(data, min_length=0):
    items = []
    for text, label in data:
        ids = lookup_indices(tokenizer(text))
        if len(ids) < min_length:
            ids += [pad_index] * (min_length - len(ids))
        items.append({"ids": torch.tensor(ids), "label": torch.tensor(label), "length": torch.tensor(len(ids))})
    return items


def get_collate_fn(pad_index):
    def collate_fn(batch):
        batch_ids = [i["ids"] for i in batch]
        batch_ids = nn.utils.rnn.pad_sequence(batch_ids, padding_value=pad_index, batch_first=True)
        batch_length = torch.stack([i["length"] for i in batch])
        batch_label = torch.stack([i["label"] for i in batch])
        return {"ids": batch_ids, "length": batch_length, "label": batch_label}

    return collate_fn


def get_data_loader(dataset, batch_size, pad_index, shuffle=False):
    return torch.utils.data.DataLoader(dataset=dataset, batch_size=batch_size,
                                       collate_fn=get_collate_fn(pad_index), shuffle=shuffle)


class NBoW(nn.Module):
    def __init__(self, vocab_size, embedding_dim, output_dim, pad_index):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.fc = nn.Linear(embedding_dim, output_dim)

    def forward(self, ids, length):
        embedded = self.embedding(ids)
        pooled = embedded.mean(dim=1)
        return self.fc(pooled)


class LSTM(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers, bidirectional,
                 dropout_rate, pad_index):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, n_layers, bidirectional=bidirectional,
                            dropout=dropout_rate, batch_first=True)
        self.fc = nn.Linear(hidden_dim * 2 if bidirectional else hidden_dim, output_dim)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, ids, length):
        embedded = self.dropout(self.embedding(ids))
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, length, batch_first=True,
                                                            enforce_sorted=False)
        packed_output, (hidden, cell) = self.lstm(packed_embedded)
        output, output_length = nn.utils.rnn.pad_packed_sequence(packed_output)
        if self.lstm.bidirectional:
            hidden = self.dropout(torch.cat([hidden[-1], hidden[-2]], dim=-1))
        else:
            hidden = self.dropout(hidden[-1])
        return self.fc(hidden)


class CNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, n_filters, filter_sizes, output_dim, dropout_rate, pad_index):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.convs = nn.ModuleList([nn.Conv1d(embedding_dim, n_filters, filter_size)
                                    for filter_size in filter_sizes])
        self.fc = nn.Linear(len(filter_sizes) * n_filters, output_dim)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, ids, length):
        embedded = self.dropout(self.embedding(ids))
        embedded = embedded.permute(0, 2, 1)
        conved = [torch.relu(conv(embedded)) for conv in self.convs]
        pooled = [conv.max(dim=-1).values for conv in conved]
        cat = self.dropout(torch.cat(pooled, dim=-1))
        return self.fc(cat)


def initialize_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_normal_(m.weight)
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Conv1d):
        nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.LSTM):
        for name, param in m.named_parameters():
            if "bias" in name:
                nn.init.zeros_(param)
            elif "weight" in name:
                nn.init.orthogonal_(param)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def get_accuracy(prediction, label):
    batch_size, _ = prediction.shape
    predicted_classes = prediction.argmax(dim=-1)
    correct_predictions = predicted_classes.eq(label).sum()
    return correct_predictions / batch_size


def train(data_loader, model, criterion, optimizer, device):
    model.train()
    epoch_losses, epoch_accs = [], []
    for batch in data_loader:
        ids = batch["ids"].to(device)
        length = batch["length"]
        label = batch["label"].to(device)
        prediction = model(ids, length)
        loss = criterion(prediction, label)
        accuracy = get_accuracy(prediction, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_losses.append(loss.item())
        epoch_accs.append(accuracy.item())
    return np.mean(epoch_losses), np.mean(epoch_accs)


def evaluate(data_loader, model, criterion, device):
    model.eval()
    epoch_losses, epoch_accs = [], []
    with torch.no_grad():
        for batch in data_loader:
            ids = batch["ids"].to(device)
            label = batch["label"].to(device)
            prediction = model(ids, batch["length"])
            epoch_losses.append(criterion(prediction, label).item())
            epoch_accs.append(get_accuracy(prediction, label).item())
    return np.mean(epoch_losses), np.mean(epoch_accs)


def predict_sentiment(text, model, device):
    ids = lookup_indices(tokenizer(text))
    tensor = torch.LongTensor(ids).unsqueeze(dim=0).to(device)
    length = torch.LongTensor([len(ids)])
    prediction = model(tensor, length).squeeze(dim=0)
    probability = torch.softmax(prediction, dim=-1)
    predicted_class = prediction.argmax(dim=-1).item()
    predicted_probability = probability[predicted_class].item()
    return predicted_class, predicted_probability


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vocab_size = len(itos)
models = {
    "nbow": (lambda: NBoW(vocab_size, 8, 2, pad_index), 0, 1e-2),
    "lstm": (lambda: LSTM(vocab_size, 8, 8, 2, 2, True, 0.5, pad_index), 0, 5e-3),
    "cnn": (lambda: CNN(vocab_size, 8, 4, [3, 4], 2, 0.25, pad_index), 4, 5e-3),
}
metrics = collections.defaultdict(list)
for name, (build, min_length, lr) in models.items():
    model = build()
    if name != "nbow":
        model.apply(initialize_weights)
    print(f"The model has {count_parameters(model):,} trainable parameters")
    train_loader = get_data_loader(numericalize(train_data, min_length), 8, pad_index, shuffle=True)
    test_loader = get_data_loader(numericalize(test_data, min_length), 8, pad_index)
    optimizer = optim.Adam(model.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    model = model.to(device)
    criterion = criterion.to(device)
    best_valid_loss = float("inf")
    for epoch in range(2):
        train_loss, train_acc = train(train_loader, model, criterion, optimizer, device)
        valid_loss, valid_acc = evaluate(test_loader, model, criterion, device)
        metrics[f"{name}_train_losses"].append(train_loss)
        metrics[f"{name}_valid_losses"].append(valid_loss)
        if valid_loss < best_valid_loss:
            best_valid_loss = valid_loss
            torch.save(model.state_dict(), f"{name}.pt")
        print(f"epoch: {epoch}")
        print(f"train_loss: {train_loss:.6f}, train_acc: {train_acc:.3f}")
        print(f"valid_loss: {valid_loss:.6f}, valid_acc: {valid_acc:.3f}")
    model.load_state_dict(torch.load(f"{name}.pt"))
    test_loss, test_acc = evaluate(test_loader, model, criterion, device)
    print(f"test_loss: {test_loss:.6f}, test_acc: {test_acc:.3f}")
    text = "the film was great and very moving" + (" it" * min_length)
    print(predict_sentiment(text, model, device))
    models[name] = model
print(models["lstm"])
