# ruff: noqa: UP008, UP032  (the repository's own style kept: super(Class, self), str.format)
"""Temporal convolutional network on the adding problem and a sequential classifier, as a script.

Modelled on locuslab/TCN (``TCN/tcn.py``: ``Chomp1d``, ``TemporalBlock`` with
``weight_norm``-ed dilated ``Conv1d`` layers, a 1x1 ``downsample`` residual, ``normal_(0, 0.01)``
weight init; ``TCN/adding_problem/{model,utils,add_test}.py`` and
``TCN/mnist_pixel/{model,pmnist_test}.py``: the data generator, the training loop with
gradient clipping and an ``optim`` chosen by name, ``log_softmax`` + ``nll_loss`` on the last
time step). This is a re-implementation in our own words with tiny sizes and synthetic data,
not a copy of that repository's files. The second model uses the newer
``torch.nn.utils.parametrizations.weight_norm``.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.nn.utils import weight_norm


class Chomp1d(nn.Module):
    """Drops the right padding so that each output sees only the past (causal convolution)."""

    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2, wn=weight_norm):
        super(TemporalBlock, self).__init__()
        self.conv1 = wn(nn.Conv1d(n_inputs, n_outputs, kernel_size,
                                  stride=stride, padding=padding, dilation=dilation))
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)

        self.conv2 = wn(nn.Conv1d(n_outputs, n_outputs, kernel_size,
                                  stride=stride, padding=padding, dilation=dilation))
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)

        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        # with the old weight_norm this draws into the derived ``weight`` (recomputed from g
        # and v at the next forward): the draws happen, their values are lost, as upstream
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2, wn=weight_norm):
        super(TemporalConvNet, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size,
                                     padding=(kernel_size - 1) * dilation_size, dropout=dropout, wn=wn)]
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCN(nn.Module):
    """The adding problem's regressor: the last time step of the TCN through a Linear."""

    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super(TCN, self).__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size, dropout=dropout)
        self.linear = nn.Linear(num_channels[-1], output_size)
        self.init_weights()

    def init_weights(self):
        self.linear.weight.data.normal_(0, 0.01)

    def forward(self, x):
        y1 = self.tcn(x)
        return self.linear(y1[:, :, -1])


class SeqClassifier(nn.Module):
    """The pixel-MNIST classifier, with the parametrizations flavour of weight norm."""

    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super(SeqClassifier, self).__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size, dropout=dropout,
                                   wn=nn.utils.parametrizations.weight_norm)
        self.linear = nn.Linear(num_channels[-1], output_size)

    def forward(self, inputs):
        y1 = self.tcn(inputs)  # (N, C, L)
        o = self.linear(y1[:, :, -1])
        return F.log_softmax(o, dim=1)


def data_generator(N, seq_length):
    """The adding problem: a random row and a two-hot marker row; the target is the sum of
    the two marked numbers."""
    X_num = torch.rand([N, 1, seq_length])
    X_mask = torch.zeros([N, 1, seq_length])
    Y = torch.zeros([N, 1])
    for i in range(N):
        positions = np.random.choice(seq_length, size=2, replace=False)
        X_mask[i, 0, positions[0]] = 1
        X_mask[i, 0, positions[1]] = 1
        Y[i, 0] = X_num[i, 0, positions[0]] + X_num[i, 0, positions[1]]
    X = torch.cat((X_num, X_mask), dim=1)
    return X, Y


def train_adding(args):
    X_train, Y_train = data_generator(16, args.seq_len)
    X_test, Y_test = data_generator(4, args.seq_len)
    model = TCN(2, 1, [args.nhid] * args.levels, kernel_size=args.ksize, dropout=args.dropout)
    print(model)
    print(sorted(model.state_dict().keys()))
    print("weight_g", model.tcn.network[0].conv1.weight_g.shape, "weight_v", model.tcn.network[0].conv1.weight_v.shape)
    optimizer = getattr(optim, args.optim)(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        model.train()
        batch_idx = 1
        total_loss = 0
        for i in range(0, X_train.size(0), args.batch_size):
            if i + args.batch_size > X_train.size(0):
                x, y = X_train[i:], Y_train[i:]
            else:
                x, y = X_train[i:(i + args.batch_size)], Y_train[i:(i + args.batch_size)]
            optimizer.zero_grad()
            output = model(x)
            loss = F.mse_loss(output, y)
            loss.backward()
            if args.clip > 0:
                total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                print(f"  grad norm {total_norm:.6f}")
            optimizer.step()
            batch_idx += 1
            total_loss += loss.item()
            print("Train Epoch: {:2d} [{:6d}/{:6d}]\tLoss: {:.6f}".format(
                epoch, i + x.size(0), X_train.size(0), loss.item()))
        model.eval()
        with torch.no_grad():
            output = model(X_test)
            test_loss = F.mse_loss(output, Y_test)
            print('Test set: Average loss: {:.6f}'.format(test_loss.item()))
    return model


def train_sequence(args):
    """Sequential 'MNIST': 12 pixels per image, two classes (bright first half or not)."""
    n, steps = 16, 12
    data = torch.rand(n, 1, steps)
    target = (data[:, 0, :steps // 2].mean(1) > data[:, 0, steps // 2:].mean(1)).long()
    permute = torch.Tensor(np.random.permutation(steps).astype(np.float64)).long()
    model = SeqClassifier(1, 2, [args.nhid] * 2, kernel_size=args.ksize, dropout=0.0)
    print(model)
    print(list(model.state_dict().keys())[:4])
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        model.train()
        for start in range(0, n, 8):
            x = data[start:start + 8][:, :, permute]
            y = target[start:start + 8]
            optimizer.zero_grad()
            output = model(x)
            loss = F.nll_loss(output, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            pred = output.data.max(1, keepdim=True)[1]
            correct = pred.eq(y.data.view_as(pred)).cpu().sum()
            print(f"seq epoch {epoch} loss {loss.item():.6f} correct {correct} {loss}")
    return model


parser = argparse.ArgumentParser(description='Sequence Modeling - TCN (tiny)')
parser.add_argument('--batch_size', type=int, default=8)
parser.add_argument('--dropout', type=float, default=0.0)
parser.add_argument('--clip', type=float, default=0.5)
parser.add_argument('--epochs', type=int, default=2)
parser.add_argument('--ksize', type=int, default=3)
parser.add_argument('--levels', type=int, default=2)
parser.add_argument('--seq_len', type=int, default=10)
parser.add_argument('--lr', type=float, default=4e-3)
parser.add_argument('--optim', type=str, default='Adam')
parser.add_argument('--nhid', type=int, default=6)
parser.add_argument('--seed', type=int, default=1111)

if __name__ == "__main__":
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    adding_model = train_adding(args)
    seq_model = train_sequence(args)
