# ruff: noqa: E501, F401, I001, UP004, UP008, UP030, UP031, UP032  (the program's own style, kept)
"""
pytorch/audio's tutorial "Speech Command Classification with torchaudio"
(``speech_command_classification_with_torchaudio_tutorial.py``, BSD licence) written
small: ``SPEECHCOMMANDS`` is replaced by 48 synthetic one-second "words" (a few chirps and
tones at 4 kHz, labels from a list of 4), ``Resample(orig_freq=4000, new_freq=2000)`` as
the tutorial's 16 kHz -> 8 kHz; ``label_to_index`` / ``index_to_label`` through
``torch.tensor(labels.index(word))``, ``pad_sequence`` collate (``permute`` before and
after, ``batch_first=True``, padding 0.), the ``M5`` net (``Conv1d`` stride 16 on raw
audio, ``BatchNorm1d``, ``MaxPool1d(4)``, ``F.avg_pool1d(x, x.shape[-1])``,
``permute(0, 2, 1)``, ``F.log_softmax(dim=2)``), ``count_parameters``, Adam with weight
decay and ``StepLR``, ``F.nll_loss(output.squeeze(), target)``, ``number_of_correct``
through ``pred.squeeze().eq(target).sum().item()``, ``get_likely_index`` by ``argmax(dim=-1)``
and ``predict``. The DataLoader shuffles (torch's permutations, drawn by shardflow too).
Added: a ``MelSpectrogram`` + ``AmplitudeToDB`` front end as the other torchaudio
tutorials set it up, printed for one clip.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torchaudio

device = torch.device("cpu")
sample_rate = 4000
labels = ["down", "go", "left", "yes"]


class SubsetSC(torch.utils.data.Dataset):
    """Synthetic stand-in for ``SPEECHCOMMANDS`` items: (waveform, sample_rate, label,
    speaker_id, utterance_number)."""

    def __init__(self, subset, n):
        g = torch.Generator().manual_seed(0 if subset == "training" else 1)
        t = torch.arange(sample_rate) / sample_rate
        self.items = []
        for i in range(n):
            k = i % len(labels)
            f0 = 200.0 * (k + 1) + 40.0 * torch.rand(1, generator=g).item()
            sweep = 300.0 * (k - 1.5)
            wave = 0.5 * torch.sin(2 * math.pi * (f0 * t + 0.5 * sweep * t ** 2))
            wave = wave * torch.exp(-((t - 0.5) ** 2) / 0.05) + 0.05 * torch.randn(sample_rate, generator=g)
            length = sample_rate - 200 * (i % 3)  # some clips shorter: padded by the collate
            self.items.append((wave[:length].unsqueeze(0), sample_rate, labels[k], "spk%d" % (i % 5), i))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, n):
        return self.items[n]


train_set = SubsetSC("training", 48)
test_set = SubsetSC("testing", 16)

waveform, sample_rate, label, speaker_id, utterance_number = train_set[0]
print("Shape of waveform: {}".format(waveform.size()))
print("Sample rate of waveform: {}".format(sample_rate))

new_sample_rate = 2000
transform = torchaudio.transforms.Resample(orig_freq=sample_rate, new_freq=new_sample_rate)
transformed = transform(waveform)
print("Shape of transformed waveform: {}".format(transformed.size()), "%.6f" % transformed.abs().sum())


def label_to_index(word):
    # Return the position of the word in labels
    return torch.tensor(labels.index(word))


def index_to_label(index):
    # Return the word corresponding to the index in labels
    # This is the inverse of label_to_index
    return labels[index]


word_start = "yes"
index = label_to_index(word_start)
word_recovered = index_to_label(index)

print(word_start, "-->", index, "-->", word_recovered)


def pad_sequence(batch):
    # Make all tensor in a batch the same length by padding with zeros
    batch = [item.t() for item in batch]
    batch = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=0.)
    return batch.permute(0, 2, 1)


def collate_fn(batch):

    # A data tuple has the form:
    # waveform, sample_rate, label, speaker_id, utterance_number

    tensors, targets = [], []

    # Gather in lists, and encode labels as indices
    for waveform, _, label, *_ in batch:
        tensors += [waveform]
        targets += [label_to_index(label)]

    # Group the list of tensors into a batched tensor
    tensors = pad_sequence(tensors)
    targets = torch.stack(targets)

    return tensors, targets


batch_size = 8

if device == "cuda":
    num_workers = 1
    pin_memory = True
else:
    num_workers = 0
    pin_memory = False

train_loader = torch.utils.data.DataLoader(
    train_set,
    batch_size=batch_size,
    shuffle=True,
    collate_fn=collate_fn,
    num_workers=num_workers,
    pin_memory=pin_memory,
)
test_loader = torch.utils.data.DataLoader(
    test_set,
    batch_size=batch_size,
    shuffle=False,
    drop_last=False,
    collate_fn=collate_fn,
    num_workers=num_workers,
    pin_memory=pin_memory,
)


class M5(nn.Module):
    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.conv4 = nn.Conv1d(2 * n_channel, 2 * n_channel, kernel_size=3)
        self.bn4 = nn.BatchNorm1d(2 * n_channel)
        self.pool4 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(self.bn1(x))
        x = self.pool1(x)
        x = self.conv2(x)
        x = F.relu(self.bn2(x))
        x = self.pool2(x)
        x = self.conv3(x)
        x = F.relu(self.bn3(x))
        x = self.pool3(x)
        x = self.conv4(x)
        x = F.relu(self.bn4(x))
        x = self.pool4(x)
        x = F.avg_pool1d(x, x.shape[-1])
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


model = M5(n_input=transformed.shape[0], n_output=len(labels), stride=4, n_channel=8)
model.to(device)
print(model)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


n = count_parameters(model)
print("Number of parameters: %s" % n)

optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0001)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.1)  # reduce the learning after 20 epochs by a factor of 10

log_interval = 2


def train(model, epoch, log_interval):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):

        data = data.to(device)
        target = target.to(device)

        # apply transform and model on whole batch directly on device
        data = transform(data)
        output = model(data)

        # negative log-likelihood for a tensor of size (batch x 1 x n_output)
        loss = F.nll_loss(output.squeeze(), target)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        # print training stats
        if batch_idx % log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)} ({100. * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss.item():.6f}")


def number_of_correct(pred, target):
    # count number of correct predictions
    return pred.squeeze().eq(target).sum().item()


def get_likely_index(tensor):
    # find most likely label index for each element in the batch
    return tensor.argmax(dim=-1)


def test(model, epoch):
    model.eval()
    correct = 0
    for data, target in test_loader:

        data = data.to(device)
        target = target.to(device)

        # apply transform and model on whole batch directly on device
        data = transform(data)
        output = model(data)

        pred = get_likely_index(output)
        correct += number_of_correct(pred, target)

    print(f"\nTest Epoch: {epoch}\tAccuracy: {correct}/{len(test_loader.dataset)} ({100. * correct / len(test_loader.dataset):.0f}%)\n")


n_epoch = 2
for epoch in range(1, n_epoch + 1):
    train(model, epoch, log_interval)
    test(model, epoch)
    scheduler.step()


def predict(tensor):
    # Use the model to predict the label of the waveform
    tensor = tensor.to(device)
    tensor = transform(tensor)
    tensor = model(tensor.unsqueeze(0))
    tensor = get_likely_index(tensor)
    tensor = index_to_label(tensor.squeeze())
    return tensor


waveform, sample_rate, utterance, *_ = train_set[-1]
print(f"Expected: {utterance}. Predicted: {predict(waveform)}.")

# the other tutorials' front end: log-mel features of one clip
mel = torchaudio.transforms.MelSpectrogram(sample_rate=sample_rate, n_fft=256, hop_length=64, n_mels=16, norm="slaney", mel_scale="slaney")
to_db = torchaudio.transforms.AmplitudeToDB(top_db=80)
feats = to_db(mel(waveform))
print("mel", tuple(feats.shape), "%.4f %.4f %.4f" % (feats.mean().item(), feats.min().item(), feats.max().item()))
print("bins", [round(v, 3) for v in feats[0, :, 10].tolist()])
