# ruff: noqa  (the style of the programs it is modelled on kept)
"""Training helpers in the style of kuangliu/pytorch-cifar's ``utils.py`` (a re-implementation
for shardflow's parity tests, not a copy): ``get_mean_and_std`` (per-channel statistics
accumulated image by image through a shuffled loader; no loader workers here),
``format_time`` and a ``progress_bar`` that writes one line per call. The repository's bar sizes itself from ``stty size``, which fails without
a terminal; this one has a fixed width."""
import sys
import time

import torch

TOTAL_BAR_LENGTH = 20.
last_time = time.time()
begin_time = last_time


def get_mean_and_std(dataset):
    '''Compute the mean and std value of dataset.'''
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=1, shuffle=True, num_workers=0)
    mean = torch.zeros(3)
    std = torch.zeros(3)
    print('==> Computing mean and std..')
    for inputs, targets in dataloader:
        for i in range(3):
            mean[i] += inputs[:, i, :, :].mean()
            std[i] += inputs[:, i, :, :].std()
    mean.div_(len(dataset))
    std.div_(len(dataset))
    return mean, std


def format_time(seconds):
    days = int(seconds / 3600 / 24)
    seconds = seconds - days * 3600 * 24
    hours = int(seconds / 3600)
    seconds = seconds - hours * 3600
    minutes = int(seconds / 60)
    seconds = seconds - minutes * 60
    secondsf = int(seconds)
    seconds = seconds - secondsf
    millis = int(seconds * 1000)

    f = ''
    i = 1
    for value, unit in ((days, 'D'), (hours, 'h'), (minutes, 'm'), (secondsf, 's'), (millis, 'ms')):
        if value > 0 and i <= 2:
            f += str(value) + unit
            i += 1
    if f == '':
        f = '0ms'
    return f


def progress_bar(current, total, msg=None):
    global last_time, begin_time
    if current == 0:
        begin_time = time.time()  # reset for a new bar
    cur_len = int(TOTAL_BAR_LENGTH * current / total)
    rest_len = int(TOTAL_BAR_LENGTH - cur_len) - 1
    cur_time = time.time()
    step_time = cur_time - last_time
    last_time = cur_time
    tot_time = cur_time - begin_time
    L = [' [', '=' * cur_len, '>', '.' * rest_len, ']']
    L.append('  Step: %s' % format_time(step_time))
    L.append(' | Tot: %s' % format_time(tot_time))
    if msg:
        L.append(' | ' + msg)
    L.append(' %d/%d ' % (current + 1, total))
    sys.stdout.write(''.join(L) + '\n')
    sys.stdout.flush()
