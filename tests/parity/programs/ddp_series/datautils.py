# ruff: noqa: I001, W291, W292, W293  (the example's own style kept)
# PyTorch's DDP tutorial series, distributed/ddp-tutorial-series/datautils.py (pytorch/examples,
# commit f45e418444b572ee5c782b90a0c2cae2489208bc, BSD-3-Clause). Unchanged.
import torch
from torch.utils.data import Dataset

class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        self.data = [(torch.rand(20), torch.rand(1)) for _ in range(size)]

    def __len__(self):
        return self.size
    
    def __getitem__(self, index):
        return self.data[index]
