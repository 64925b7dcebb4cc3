# ruff: noqa: I001, E402, E111, E114, E117, F541  (the tutorial's own style and imports, kept)
# pytorch/tutorials intermediate_source/optimizer_step_in_backward_tutorial.py at commit
# 2a488705e00cc04c12e905e3d68d351c1834661e (BSD-3-Clause), "How to save memory by fusing the
# optimizer step into the backward pass": a training loop with Adam, then one Adam per
# parameter (foreach=False) stepped from `register_post_accumulate_grad_hook` during
# backward. Changes, and only these: torchvision's pretrained vit_l_16 (a download) became
# `model`, a small conv net built here, and IMAGE_SIZE 224 became 8; `.cuda()` calls are
# gone (CPU); the CUDA memory snapshots (`torch.cuda.memory._record_memory_history(enabled=
# 'all')` ... `_snapshot()` ... `(enabled=None)`, which record the GPU allocations as they
# happen) became what they show of the gradients on CPU: `record_memory_history()` registers
# a post-accumulate-grad hook on every parameter that appends the bytes of gradients held
# at that moment (`grad_bytes`) to `s`, `stop_recording()` removes those hooks, and `s` is
# pickled to the tutorial's file names; the tutorial's long comment blocks are shortened.
# The code is as written.
"""
How to save memory by fusing the optimizer step into the backward pass
======================================================================

``Tensor.register_post_accumulate_grad_hook(hook)`` runs the optimizer step for a parameter
as soon as its gradient is accumulated, so gradients need not be held until the step.
"""

import torch
import torch.nn as nn
from pickle import dump

model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))
optimizer = torch.optim.Adam(model.parameters())

IMAGE_SIZE = 8

def train(model, optimizer):
  # create our fake image input: tensor shape is batch_size, channels, height, width
  fake_image = torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE)

  # call our forward and backward
  loss = model.forward(fake_image)
  loss.sum().backward()

  # optimizer update
  optimizer.step()
  optimizer.zero_grad()

def grad_bytes(model):
  # what the memory snapshot shows of the gradients: the bytes still held
  return sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)

def record_memory_history():
  # the snapshot's view of the gradients: their bytes each time one is accumulated
  return [p.register_post_accumulate_grad_hook(lambda p: s.append(grad_bytes(model))) for p in model.parameters()]

def stop_recording(handles):
  for h in handles:
    h.remove()

s = []
# tell CUDA to start recording memory allocations
recording = record_memory_history()

# train 3 steps
for _ in range(3):
  train(model, optimizer)

# save a snapshot of the memory allocations
with open(f"snapshot.pickle", "wb") as f:
    dump(s, f)

# tell CUDA to stop recording memory allocations now
stop_recording(recording)

###############################################################################
# One optimizer per parameter, stepped by a hook once its gradient is accumulated.

optimizer_dict = {p: torch.optim.Adam([p], foreach=False) for p in model.parameters()}

# Define our hook, which will call the optimizer ``step()`` and ``zero_grad()``
def optimizer_hook(parameter) -> None:
  optimizer_dict[parameter].step()
  optimizer_dict[parameter].zero_grad()

# Register the hook onto every parameter
for p in model.parameters():
   p.register_post_accumulate_grad_hook(optimizer_hook)

# Now remember our previous ``train()`` function? Since the optimizer has been
# fused into the backward, we can remove the optimizer step and zero_grad calls.
def train(model):
  # create our fake image input: tensor shape is batch_size, channels, height, width
  fake_image = torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE)

  # call our forward and backward
  loss = model.forward(fake_image)
  loss.sum().backward()

  # optimizer update --> no longer needed!
  # optimizer.step()
  # optimizer.zero_grad()

# delete optimizer memory from before to get a clean slate for the next
# memory snapshot
del optimizer

s = []
# tell CUDA to start recording memory allocations
recording = record_memory_history()

# train 3 steps. note that we no longer pass the optimizer into train()
for _ in range(3):
  train(model)

# save a snapshot of the memory allocations
with open(f"snapshot-opt-in-bwd.pickle", "wb") as f:
    dump(s, f)

# tell CUDA to stop recording memory allocations now
stop_recording(recording)
