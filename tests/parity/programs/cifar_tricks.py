# ruff: noqa  (the style of the programs it is modelled on kept)
# Training utilities that CIFAR repositories carry beside kuangliu/pytorch-cifar's loop:
# mixup (facebookresearch/mixup-cifar10 `train.py`: `np.random.beta`, `torch.randperm`,
# `mixup_criterion`), cutout (uoguelph-mlrg/Cutout `util/cutout.py`: a NumPy mask made
# with `np.random.randint`, `torch.from_numpy(mask).expand_as(img)`), `AverageMeter` and
# `accuracy(output, target, topk=(1, 5))` (pytorch/examples imagenet: `topk`, `t()`, `eq`,
# `expand_as`, `reshape(-1).float().sum(0, keepdim=True)`, `mul_(100.0 / batch_size)`),
# label smoothing cross entropy written by hand in its two common forms (`gather` of
# log-probabilities; a `scatter_` target distribution), weight-decay groups that leave out
# BatchNorm weights and biases (`named_parameters` filtering), `MultiStepLR`, a per-batch
# `OneCycleLR`, weiaicunzai/pytorch-cifar100's `WarmUpLR(_LRScheduler)` stepped per batch
# beside a `MultiStepLR` stepped with `step(epoch)`, an EMA of the weights (YOLOv5 / timm ModelEma style: `deepcopy`, then under
# `torch.no_grad()` `mul_`/`add_` over `state_dict().values()` for floating entries, and
# timm's `copy_` of `decay * e + (1 - decay) * m` over every entry, integer
# `num_batches_tracked` included), and `torch.save` of the EMA model's state.
# A re-implementation for shardflow's parity tests, not a copy: our own text with those
# projects' torch calls. Data are a few synthetic 3x32x32 images made with NumPy.
import argparse
import os
import time
from copy import deepcopy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class AverageMeter(object):
    """Computes and stores the average and current value"""
    def __init__(self, name, fmt=':f'):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
        return fmtstr.format(**self.__dict__)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def mixup_data(x, y, alpha=1.0):
    '''Returns mixed inputs, pairs of targets, and lambda'''
    if alpha > 0:
        lam = np.random.beta(alpha, alpha)
    else:
        lam = 1
    batch_size = x.size()[0]
    index = torch.randperm(batch_size)
    mixed_x = lam * x + (1 - lam) * x[index, :]
    y_a, y_b = y, y[index]
    return mixed_x, y_a, y_b, lam


def mixup_criterion(criterion, pred, y_a, y_b, lam):
    return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)


class Cutout(object):
    """Randomly mask out one or more square patches from an image."""
    def __init__(self, n_holes, length):
        self.n_holes = n_holes
        self.length = length

    def __call__(self, img):
        h = img.size(1)
        w = img.size(2)
        mask = np.ones((h, w), np.float32)
        for n in range(self.n_holes):
            y = np.random.randint(h)
            x = np.random.randint(w)
            y1 = np.clip(y - self.length // 2, 0, h)
            y2 = np.clip(y + self.length // 2, 0, h)
            x1 = np.clip(x - self.length // 2, 0, w)
            x2 = np.clip(x + self.length // 2, 0, w)
            mask[y1: y2, x1: x2] = 0.
        mask = torch.from_numpy(mask)
        mask = mask.expand_as(img)
        img = img * mask
        return img


class CIFARLike(torch.utils.data.Dataset):
    def __init__(self, n, seed, transform=None):
        rng = np.random.RandomState(seed)
        self.data = rng.randn(n, 3, 32, 32).astype(np.float32)
        self.targets = rng.randint(0, 10, size=n).tolist()
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        img = torch.from_numpy(self.data[index])
        if self.transform is not None:
            img = self.transform(img)
        return img, self.targets[index]


class LabelSmoothingCrossEntropy(nn.Module):
    """NLL of the target mixed with the mean NLL over classes."""
    def __init__(self, smoothing=0.1):
        super(LabelSmoothingCrossEntropy, self).__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1. - smoothing

    def forward(self, x, target):
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
        nll_loss = nll_loss.squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


class LabelSmoothingLoss(nn.Module):
    """Cross entropy against a smoothed one-hot distribution built with scatter_."""
    def __init__(self, classes, smoothing=0.0, dim=-1):
        super(LabelSmoothingLoss, self).__init__()
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.cls = classes
        self.dim = dim

    def forward(self, pred, target):
        pred = pred.log_softmax(dim=self.dim)
        with torch.no_grad():
            true_dist = torch.zeros_like(pred)
            true_dist.fill_(self.smoothing / (self.cls - 1))
            true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        return torch.mean(torch.sum(-true_dist * pred, dim=self.dim))


class Block(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super(Block, self).__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10):
        super(SmallResNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.layer1 = Block(4, 8, 2)
        self.layer2 = Block(8, 8, 2)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer2(self.layer1(out))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.fc(out)


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if len(param.shape) == 1 or name.endswith('.bias'):
            no_decay.append(param)
        else:
            decay.append(param)
    return [{'params': no_decay, 'weight_decay': 0.}, {'params': decay, 'weight_decay': weight_decay}]


class ModelEMA:
    """Exponential moving average of a model's state (floating entries only)."""
    def __init__(self, model, decay=0.9):
        self.ema = deepcopy(model).eval()
        self.decay = decay
        self.updates = 0
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        with torch.no_grad():
            self.updates += 1
            d = self.decay
            msd = model.state_dict()
            for k, v in self.ema.state_dict().items():
                if v.dtype.is_floating_point:
                    v *= d
                    v += (1. - d) * msd[k].detach()


class ModelEmaV2(nn.Module):
    """EMA over every state entry through copy_ (integer buffers truncate the blend)."""
    def __init__(self, model, decay=0.9):
        super(ModelEmaV2, self).__init__()
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)


class WarmUpLR(optim.lr_scheduler._LRScheduler):
    """warmup_training learning rate scheduler (weiaicunzai/pytorch-cifar100 style)"""
    def __init__(self, optimizer, total_iters, last_epoch=-1):
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base_lr * self.last_epoch / (self.total_iters + 1e-8) for base_lr in self.base_lrs]


def main():
    parser = argparse.ArgumentParser(description='CIFAR tricks')
    parser.add_argument('--lr', default=0.05, type=float)
    parser.add_argument('--alpha', default=1., type=float, help='mixup interpolation coefficient')
    parser.add_argument('--epochs', default=2, type=int)
    parser.add_argument('--sched', default='onecycle', choices=['onecycle', 'multistep', 'warmup'])
    parser.add_argument('--warm', default=1, type=int, help='warm up epochs (--sched warmup)')
    args = parser.parse_args()

    np.random.seed(0)
    trainset = CIFARLike(8, seed=3, transform=Cutout(n_holes=1, length=16))
    trainloader = torch.utils.data.DataLoader(trainset, batch_size=4, shuffle=True)
    testset = CIFARLike(6, seed=4)
    testloader = torch.utils.data.DataLoader(testset, batch_size=6, shuffle=False)

    net = SmallResNet()
    ema = ModelEMA(net, decay=0.9)
    ema2 = ModelEmaV2(net, decay=0.9)
    optimizer = optim.SGD(param_groups(net, 5e-4), lr=args.lr, momentum=0.9, nesterov=True)
    print('groups:', [len(g['params']) for g in optimizer.param_groups],
          [g['weight_decay'] for g in optimizer.param_groups])
    if args.sched == 'onecycle':
        scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                  steps_per_epoch=len(trainloader))
    elif args.sched == 'multistep':
        scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.1)
    else:  # pytorch-cifar100: MultiStepLR stepped with the epoch, a warm-up stepped per batch
        scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.2)
        warmup_scheduler = WarmUpLR(optimizer, len(trainloader) * args.warm)
    criterion = LabelSmoothingCrossEntropy(smoothing=0.1)
    criterion2 = LabelSmoothingLoss(10, smoothing=0.1)
    builtin = nn.CrossEntropyLoss(label_smoothing=0.1)

    for epoch in range(args.epochs):
        if args.sched == 'warmup' and epoch + 1 > args.warm:
            scheduler.step(epoch + 1)
        net.train()
        losses = AverageMeter('Loss', ':.4e')
        start = time.time()
        for i, (inputs, targets) in enumerate(trainloader):
            inputs, targets_a, targets_b, lam = mixup_data(inputs, targets, args.alpha)
            outputs = net(inputs)
            loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
            other = criterion2(outputs, targets_a).item(), builtin(outputs, targets_a).item()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if args.sched == 'onecycle':
                scheduler.step()
            elif args.sched == 'warmup' and epoch + 1 <= args.warm:
                warmup_scheduler.step()
            ema.update(net)
            ema2.update(net)
            losses.update(loss.item(), inputs.size(0))
            print(f'[{epoch}][{i}] lam {lam:.4f} {losses} smooth {other[0]:.6f} {other[1]:.6f} '
                  f'lr {optimizer.param_groups[0]["lr"]:.6f} momentum {optimizer.param_groups[0]["momentum"]:.4f}')
        if args.sched == 'multistep':
            scheduler.step()
            print('lr', scheduler.get_last_lr())
        assert time.time() - start >= 0

        for name, model in (('net', net), ('ema', ema.ema), ('ema2', ema2.module)):
            model.eval()
            top1 = AverageMeter('Acc@1', ':6.2f')
            top5 = AverageMeter('Acc@5', ':6.2f')
            with torch.no_grad():
                for inputs, targets in testloader:
                    output = model(inputs)
                    acc1, acc5 = accuracy(output, targets, topk=(1, 5))
                    top1.update(acc1[0], inputs.size(0))
                    top5.update(acc5[0], inputs.size(0))
            print(f' * {name} {top1} {top5} {acc1} {acc5.item():.3f} logits {output[0, :3]}')
    print('num_batches_tracked', ema.ema.bn1.num_batches_tracked, ema2.module.bn1.num_batches_tracked,
          net.bn1.num_batches_tracked)
    print('ema running_mean', ema.ema.bn1.running_mean)
    os.makedirs('checkpoint', exist_ok=True)
    torch.save({'ema': ema.ema.state_dict(), 'updates': ema.updates}, './checkpoint/ema.pth')
    torch.save(ema2.state_dict(), './checkpoint/ema2.pth')
    return net, ema, ema2


if __name__ == '__main__':
    net, ema, ema2 = main()
