# ruff: noqa: F401, I001, UP008, UP031, UP039, W291  (the program's own style, kept)
# eriklindernoren/PyTorch-GAN, implementations/cyclegan/utils.py (MIT license), at commit
# 9e3ac57d2a0480ded339841dda18b13e2645987f. Unchanged (its torchvision is the stand-in in
# ../../_torchvision_extras.py). cyclegan.py uses both classes: ReplayBuffer for the
# discriminators' fake images, LambdaLR(...).step as torch.optim.lr_scheduler.LambdaLR's
# lr_lambda.
import random
import time
import datetime
import sys

from torch.autograd import Variable
import torch
import numpy as np

from torchvision.utils import save_image

class ReplayBuffer():
    def __init__(self, max_size=50):
        assert (max_size > 0), 'Empty buffer or trying to create a black hole. Be careful.'
        self.max_size = max_size
        self.data = []

    def push_and_pop(self, data):
        to_return = []
        for element in data.data:
            element = torch.unsqueeze(element, 0)
            if len(self.data) < self.max_size:
                self.data.append(element)
                to_return.append(element)
            else:
                if random.uniform(0,1) > 0.5:
                    i = random.randint(0, self.max_size-1)
                    to_return.append(self.data[i].clone())
                    self.data[i] = element
                else:
                    to_return.append(element)
        return Variable(torch.cat(to_return))

class LambdaLR():
    def __init__(self, n_epochs, offset, decay_start_epoch):
        assert ((n_epochs - decay_start_epoch) > 0), "Decay must start before the training session ends!"
        self.n_epochs = n_epochs
        self.offset = offset
        self.decay_start_epoch = decay_start_epoch

    def step(self, epoch):
        return 1.0 - max(0, epoch + self.offset - self.decay_start_epoch)/(self.n_epochs - self.decay_start_epoch)
