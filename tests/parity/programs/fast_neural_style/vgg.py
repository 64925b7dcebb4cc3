# ruff: noqa: UP008  (the example's own Python-2-style super() calls, kept)
# PyTorch's examples/fast_neural_style/neural_style/vgg.py (github.com/pytorch/examples,
# BSD-3-Clause): Vgg16 slices the first 23 layers of VGG-16's `features` into four
# nn.Sequential stages (add_module) and returns a namedtuple of their outputs. Change:
# torchvision's models.vgg16(pretrained=True).features (a download) is built here layer for
# layer as torchvision builds it (3x3 convs 64,64,M,128,128,M,256,256,256,M,512,512,512,...
# with ReLU(inplace=True)), randomly initialised; the rest is unchanged.
from collections import namedtuple

import torch


def vgg16_features():
    layers, in_channels = [], 3
    for v in [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 'M', 512, 512, 512, 'M', 512, 512, 512, 'M']:
        if v == 'M':
            layers += [torch.nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            layers += [torch.nn.Conv2d(in_channels, v, kernel_size=3, padding=1), torch.nn.ReLU(inplace=True)]
            in_channels = v
    return torch.nn.Sequential(*layers)


class Vgg16(torch.nn.Module):
    def __init__(self, requires_grad=False):
        super(Vgg16, self).__init__()
        vgg_pretrained_features = vgg16_features()
        self.slice1 = torch.nn.Sequential()
        self.slice2 = torch.nn.Sequential()
        self.slice3 = torch.nn.Sequential()
        self.slice4 = torch.nn.Sequential()
        for x in range(4):
            self.slice1.add_module(str(x), vgg_pretrained_features[x])
        for x in range(4, 9):
            self.slice2.add_module(str(x), vgg_pretrained_features[x])
        for x in range(9, 16):
            self.slice3.add_module(str(x), vgg_pretrained_features[x])
        for x in range(16, 23):
            self.slice4.add_module(str(x), vgg_pretrained_features[x])
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        h = self.slice4(h)
        h_relu4_3 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3'])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
        return out
