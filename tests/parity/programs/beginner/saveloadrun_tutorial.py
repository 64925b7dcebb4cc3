# ruff: noqa  (the tutorial as published, its own style kept)
# pytorch/tutorials beginner_source/basics/saveloadrun_tutorial.py (BSD-3-Clause), stored
# commit 71d9f09. Changed: the prose is shortened to the section titles; torchvision.models
# is the parity tests' stand-in (a VGG-16 of torchvision's layout at 1/32 of the widths,
# seeded stand-in weights: no download, no 138M parameters); the whole-model load is
# `torch.load('model.pth', weights_only=False)`, as the tutorial's later versions write it
# (PyTorch >= 2.6 refuses a whole module otherwise). Nothing else; it runs as a script.
"""
Save and Load the Model
============================
"""

import torch
import torchvision.models as models


#######################################################################
# Saving and Loading Model Weights

model = models.vgg16(weights='IMAGENET1K_V1')
torch.save(model.state_dict(), 'model_weights.pth')

model = models.vgg16() # we do not specify ``weights``, i.e. create untrained model
model.load_state_dict(torch.load('model_weights.pth'))
model.eval()

#######################################################################
# Saving and Loading Models with Shapes

torch.save(model, 'model.pth')

model = torch.load('model.pth', weights_only=False)
