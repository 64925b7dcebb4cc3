# ruff: noqa  (the style of the programs it is modelled on kept)
# kuangliu/pytorch-cifar (github.com/kuangliu/pytorch-cifar, MIT License): main.py, its
# training script. A re-implementation for shardflow's parity tests, not a copy: the same
# torch calls and habits (argparse flags, `device = 'cuda' if ... else 'cpu'`,
# `torch.nn.DataParallel` and `cudnn.benchmark = True`, `--resume` from a checkpoint dict
# {'net', 'acc', 'epoch'} through torch.save/torch.load, SGD momentum + weight decay,
# CosineAnnealingLR(T_max=200), `net.train()` / `net.eval()` + `torch.no_grad()`,
# `outputs.max(1)`, `predicted.eq(targets).sum().item()`, a progress bar per batch).
# Changes: the model is picked by `--net NAME` from models.NETS (tiny widths); CIFAR-10 is
# synthetic normalised 3x32x32 images made with NumPy (no download, no augmentation);
# `--epochs` (the repository trains 200); DataParallel wraps the net on the CPU path too
# (the repository wraps only under CUDA) so that its `module.` keys are exercised; each run
# also prints the model, its parameter count, the checkpoint's first keys and the training
# set's `get_mean_and_std` (from utils.py).
'''Train CIFAR10 with PyTorch.'''
import torch
import torch.nn as nn
import torch.optim as optim
import torch.nn.functional as F
import torch.backends.cudnn as cudnn

import os
import argparse

import numpy as np

from models import NETS
from utils import get_mean_and_std, progress_bar


def synthetic_cifar(n, seed):
    rng = np.random.RandomState(seed)
    mean = np.array([0.4914, 0.4822, 0.4465], dtype=np.float32).reshape(3, 1, 1)
    std = np.array([0.2023, 0.1994, 0.2010], dtype=np.float32).reshape(3, 1, 1)
    images = ((rng.rand(n, 3, 32, 32).astype(np.float32) - mean) / std).astype(np.float32)
    labels = rng.randint(0, 10, size=n)
    return torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


parser = argparse.ArgumentParser(description='PyTorch CIFAR10 Training')
parser.add_argument('--lr', default=0.1, type=float, help='learning rate')
parser.add_argument('--resume', '-r', action='store_true', help='resume from checkpoint')
parser.add_argument('--net', default='VGG', choices=sorted(NETS), help='model')
parser.add_argument('--epochs', default=2, type=int, help='epochs to train')
args = parser.parse_args()

device = 'cuda' if torch.cuda.is_available() else 'cpu'
best_acc = 0  # best test accuracy
start_epoch = 0  # start from epoch 0 or last checkpoint epoch

# Data
print('==> Preparing data..')
trainset = synthetic_cifar(4, seed=1)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=2, shuffle=True, num_workers=0)
print('mean, std:', *get_mean_and_std(trainset))
testset = synthetic_cifar(4, seed=2)
testloader = torch.utils.data.DataLoader(testset, batch_size=100, shuffle=False, num_workers=0)

classes = ('plane', 'car', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck')

# Model
print('==> Building model..')
net = NETS[args.net]()
net = net.to(device)
net = torch.nn.DataParallel(net)
cudnn.benchmark = True
print(net)
print('params:', sum(p.numel() for p in net.parameters() if p.requires_grad))

if args.resume:
    # Load checkpoint.
    print('==> Resuming from checkpoint..')
    assert os.path.isdir('checkpoint'), 'Error: no checkpoint directory found!'
    checkpoint = torch.load('./checkpoint/ckpt.pth')
    net.load_state_dict(checkpoint['net'])
    best_acc = checkpoint['acc']
    start_epoch = checkpoint['epoch']
    print('resumed at epoch', start_epoch, 'best acc', best_acc, list(checkpoint['net'])[:2])

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)


# Training
def train(epoch):
    print('\nEpoch: %d' % epoch)
    net.train()
    train_loss = 0
    correct = 0
    total = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()

        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()

        progress_bar(batch_idx, len(trainloader), 'Loss: %.5f | Acc: %.3f%% (%d/%d)'
                     % (train_loss / (batch_idx + 1), 100. * correct / total, correct, total))


def test(epoch):
    global best_acc
    net.eval()
    test_loss = 0
    correct = 0
    total = 0
    with torch.no_grad():
        for batch_idx, (inputs, targets) in enumerate(testloader):
            inputs, targets = inputs.to(device), targets.to(device)
            outputs = net(inputs)
            loss = criterion(outputs, targets)

            test_loss += loss.item()
            _, predicted = outputs.max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()

            progress_bar(batch_idx, len(testloader), 'Loss: %.5f | Acc: %.3f%% (%d/%d)'
                         % (test_loss / (batch_idx + 1), 100. * correct / total, correct, total))

    # Save checkpoint.
    acc = 100. * correct / total
    if acc > best_acc:
        print('Saving..')
        state = {
            'net': net.state_dict(),
            'acc': acc,
            'epoch': epoch,
        }
        if not os.path.isdir('checkpoint'):
            os.mkdir('checkpoint')
        torch.save(state, './checkpoint/ckpt.pth')
        best_acc = acc


for epoch in range(start_epoch, start_epoch + args.epochs):
    train(epoch)
    test(epoch)
    scheduler.step()
    print('lr', scheduler.get_last_lr())
