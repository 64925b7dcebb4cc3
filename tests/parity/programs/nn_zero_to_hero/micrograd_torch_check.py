# ruff: noqa  (the lecture notebook's code, its own style kept)
# Karpathy's "Neural Networks: Zero to Hero" lecture notebook
# lectures/micrograd/micrograd_lecture_second_half_roughly.ipynb (github.com/karpathy/
# nn-zero-to-hero, MIT License, stored commit 56eda75ed81390151aa72466f1b78022ad2eb574): the
# cells that use torch -- the one neuron (x1*w1 + x2*w2 + b, tanh) built from float64
# `torch.Tensor([...]).double()` leaves with `requires_grad = True` set by attribute, its
# `o.data.item()`, `o.backward()` and the four `.grad.item()` lines that the lecture compares
# with micrograd's Value gradients. Changes, and only these: the other cells (micrograd's
# Value / Neuron / MLP in pure Python, graphviz drawings, matplotlib plots) are left out --
# they do not touch torch.

import torch


x1 = torch.Tensor([2.0]).double()                ; x1.requires_grad = True
x2 = torch.Tensor([0.0]).double()                ; x2.requires_grad = True
w1 = torch.Tensor([-3.0]).double()               ; w1.requires_grad = True
w2 = torch.Tensor([1.0]).double()                ; w2.requires_grad = True
b = torch.Tensor([6.8813735870195432]).double()  ; b.requires_grad = True
n = x1*w1 + x2*w2 + b
o = torch.tanh(n)

print(o.data.item())
o.backward()

print('---')
print('x2', x2.grad.item())
print('w2', w2.grad.item())
print('x1', x1.grad.item())
print('w1', w1.grad.item())
