# ruff: noqa: E402, E731, F841, I001, UP008, UP031, UP032, C401  (the tutorial's own style: mid-file imports, lambdas, unused `elapsed`/`loss`, super(C, self), %/format, set([...]), kept)
# PyTorch's tutorial "Text classification with the torchtext library" (pytorch/tutorials,
# beginner_source/text_sentiment_ngrams_tutorial.py, BSD-3-Clause), in its current form as
# published at https://pytorch.org/tutorials/beginner/text_sentiment_ngrams_tutorial.html
# (TextClassificationModel: nn.EmbeddingBag with offsets + Linear, `.data.uniform_` init;
# collate_batch building text/offsets with `cumsum`; CrossEntropyLoss, SGD lr 5,
# clip_grad_norm_(0.1), StepLR(optimizer, 1.0, gamma=0.1) stepped when validation accuracy
# drops; random_split; predict on a new text); the stored repository copy (commit 05a9a0b) is
# the older torchtext-0.4 version. Changes, and only these: torchtext (AG_NEWS, a download;
# get_tokenizer, build_vocab_from_iterator, to_map_style_dataset) became `_NEWS`, a tiny
# made-up set of (label, text) pairs, a lower-case/split tokenizer and a small `Vocab` with
# torchtext's calls (`vocab(tokens)`, `vocab["<unk>"]`, `set_default_index`, `len`); sizes
# (emsize 64 -> 16, BATCH_SIZE 64 -> 16, EPOCHS 10 -> 3, log_interval 500 -> 1); the
# module-level epoch loop and test are `main()`, which returns the validation accuracies,
# the test accuracy and the prediction (its `model.to("cpu")` left out: the model is on the
# CPU); train() also returns the batch losses; the example text is a made-up one.
import torch
import re

# --- torchtext stand-ins: a made-up AG_NEWS (label 1..4, text), tokenizer and vocabulary
_TOPICS = {1: ["minister", "election", "talks", "border", "president", "treaty"],
           2: ["match", "goal", "season", "coach", "team", "cup"],
           3: ["shares", "profit", "market", "bank", "oil", "prices"],
           4: ["software", "internet", "chip", "space", "computer", "phone"]}
_COMMON = ["the", "a", "on", "after", "new", "says", "in", "of"]


def _news(n, seed):
    import random
    rnd = random.Random(seed)
    data = []
    for i in range(n):
        label = rnd.randint(1, 4)
        words = [rnd.choice(_TOPICS[label] if rnd.random() < 0.6 else _COMMON) for _ in range(rnd.randint(3, 9))]
        data.append((label, " ".join(words).capitalize() + "."))
    return data


def AG_NEWS(split=None):
    train, test = _news(40, seed=0), _news(16, seed=1)
    return {"train": train, "test": test}[split] if split else (train, test)


def get_tokenizer(name):
    assert name == "basic_english"
    return lambda text: re.sub(r"([.,!?])", r" \1 ", text.lower()).split()


class Vocab:
    """torchtext's Vocab calls the tutorial makes."""

    def __init__(self, tokens, specials):
        self.itos = list(specials) + sorted(set(tokens) - set(specials))
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.default_index = None

    def set_default_index(self, index):
        self.default_index = index

    def __getitem__(self, token):
        return self.stoi.get(token, self.default_index)

    def __call__(self, tokens):
        return [self[t] for t in tokens]

    def __len__(self):
        return len(self.itos)


def build_vocab_from_iterator(iterator, specials):
    return Vocab([t for tokens in iterator for t in tokens], specials)


to_map_style_dataset = list

# --- the tutorial
train_iter = iter(AG_NEWS(split="train"))

tokenizer = get_tokenizer("basic_english")
train_iter = AG_NEWS(split="train")


def yield_tokens(data_iter):
    for _, text in data_iter:
        yield tokenizer(text)


vocab = build_vocab_from_iterator(yield_tokens(train_iter), specials=["<unk>"])
vocab.set_default_index(vocab["<unk>"])

text_pipeline = lambda x: vocab(tokenizer(x))
label_pipeline = lambda x: int(x) - 1

from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


train_iter = AG_NEWS(split="train")
dataloader = DataLoader(
    train_iter, batch_size=8, shuffle=False, collate_fn=collate_batch
)

from torch import nn


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


train_iter = AG_NEWS(split="train")
num_class = len(set([label for (label, text) in train_iter]))
vocab_size = len(vocab)
emsize = 16
model = TextClassificationModel(vocab_size, emsize, num_class).to(device)

import time


def train(dataloader):
    model.train()
    total_acc, total_count = 0, 0
    log_interval = 1
    start_time = time.time()
    losses = []

    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses.append(loss.item())
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        if idx % log_interval == 0 and idx > 0:
            elapsed = time.time() - start_time
            print(
                "| epoch {:3d} | {:5d}/{:5d} batches "
                "| accuracy {:8.3f}".format(
                    epoch, idx, len(dataloader), total_acc / total_count
                )
            )
            total_acc, total_count = 0, 0
            start_time = time.time()
    return losses


def evaluate(dataloader):
    model.eval()
    total_acc, total_count = 0, 0

    with torch.no_grad():
        for idx, (label, text, offsets) in enumerate(dataloader):
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


from torch.utils.data.dataset import random_split

# Hyperparameters
EPOCHS = 3  # epoch
LR = 5  # learning rate
BATCH_SIZE = 16  # batch size for training

criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
total_accu = None
train_iter, test_iter = AG_NEWS()
train_dataset = to_map_style_dataset(train_iter)
test_dataset = to_map_style_dataset(test_iter)
num_train = int(len(train_dataset) * 0.95)


def main():
    global epoch, total_accu
    split_train_, split_valid_ = random_split(
        train_dataset, [num_train, len(train_dataset) - num_train]
    )

    train_dataloader = DataLoader(
        split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
    )
    valid_dataloader = DataLoader(
        split_valid_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
    )
    test_dataloader = DataLoader(
        test_dataset, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
    )

    losses, accuracies = [], []
    for epoch in range(1, EPOCHS + 1):
        epoch_start_time = time.time()
        losses += train(train_dataloader)
        accu_val = evaluate(valid_dataloader)
        accuracies.append(accu_val)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        print("-" * 59)
        print(
            "| end of epoch {:3d} | time: {:5.2f}s | "
            "valid accuracy {:8.3f} ".format(
                epoch, time.time() - epoch_start_time, accu_val
            )
        )
        print("-" * 59)

    print("Checking the results of test dataset.")
    accu_test = evaluate(test_dataloader)
    print("test accuracy {:8.3f}".format(accu_test))
    prediction = predict(ex_text_str, text_pipeline)
    print("This is a %s news" % ag_news_label[prediction])
    return losses, accuracies, accu_test, prediction


ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}


def predict(text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


ex_text_str = "The coach says the team scored a late goal in the cup match."
