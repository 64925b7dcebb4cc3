# ruff: noqa  (the recipe as published, its own style kept)
# pytorch/tutorials recipes_source/recipes/saving_and_loading_models_for_inference.py
# (BSD-3-Clause), stored commit 0a7e686. Changed: the prose is cut to the step titles.
# Nothing else (``F`` is used in ``forward`` without an import, as published: the recipe
# never calls the model); it runs as a script.
"""
Saving and loading models for inference in PyTorch
==================================================
"""

# 1. Import necessary libraries for loading our data

import torch
import torch.nn as nn
import torch.optim as optim


# 2. Define and intialize the neural network

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

net = Net()
print(net)


# 3. Initialize the optimizer

optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)


# 4. Save and load the model via ``state_dict``

# Specify a path
PATH = "state_dict_model.pt"

# Save
torch.save(net.state_dict(), PATH)

# Load
model = Net()
model.load_state_dict(torch.load(PATH))
model.eval()


# 5. Save and load entire model

# Specify a path
PATH = "entire_model.pt"

# Save
torch.save(net, PATH)

# Load
model = torch.load(PATH)
model.eval()
