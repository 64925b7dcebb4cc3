"""A factorization machine and DeepFM on made-up categorical click data, as a script.

Modelled on rixwew/pytorch-fm (``torchfm/layer.py``: ``FeaturesLinear``,
``FeaturesEmbedding`` with per-field offsets, ``FactorizationMachine``'s
``0.5 * (square_of_sum - sum_of_square)`` through ``torch.sum(..., dim=1, keepdim=True)``,
``MultiLayerPerceptron``; ``torchfm/model/dfm.py``) and the habit of DLRM-style code of an
``nn.EmbeddingBag(mode='sum')`` fed flat indices with ``offsets``, ``sparse=True``
embeddings stepped by ``torch.optim.SparseAdam`` and the dense rest by ``Adam``. This is a
re-implementation in our own words with tiny sizes and synthetic data, not a copy of those
repositories' files.

``--sparse`` makes the embeddings ``sparse=True`` and steps them with ``SparseAdam``;
without it (pytorch-fm's default) every parameter is dense and one ``Adam`` steps them all.
The tests run both forms.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn


class FeaturesLinear(nn.Module):
    """First-order term: one weight per feature value, summed over the fields by an
    EmbeddingBag (flat indices, one bag per sample)."""

    def __init__(self, field_dims, output_dim=1):
        super().__init__()
        self.fc = nn.EmbeddingBag(sum(field_dims), output_dim, mode='sum', sparse=SPARSE)
        self.bias = nn.Parameter(torch.zeros((output_dim,)))

    def forward(self, x):
        flat = x.reshape(-1)
        offsets = torch.arange(0, x.numel(), x.size(1))
        return self.fc(flat, offsets) + self.bias


class FeaturesEmbedding(nn.Module):
    def __init__(self, field_dims, embed_dim):
        super().__init__()
        self.embedding = nn.Embedding(sum(field_dims), embed_dim, sparse=SPARSE)
        nn.init.xavier_uniform_(self.embedding.weight.data)

    def forward(self, x):
        return self.embedding(x)


class FactorizationMachine(nn.Module):
    def __init__(self, reduce_sum=True):
        super().__init__()
        self.reduce_sum = reduce_sum

    def forward(self, x):
        square_of_sum = torch.sum(x, dim=1, keepdim=True) ** 2
        sum_of_square = torch.sum(x ** 2, dim=1, keepdim=True)
        ix = square_of_sum - sum_of_square
        if self.reduce_sum:
            ix = torch.sum(ix, dim=2)
        return 0.5 * ix


class MultiLayerPerceptron(nn.Module):
    def __init__(self, input_dim, embed_dims, dropout, output_layer=True):
        super().__init__()
        layers = []
        for embed_dim in embed_dims:
            layers.append(nn.Linear(input_dim, embed_dim))
            layers.append(nn.BatchNorm1d(embed_dim))
            layers.append(nn.ReLU())
            layers.append(nn.Dropout(p=dropout))
            input_dim = embed_dim
        if output_layer:
            layers.append(nn.Linear(input_dim, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, x):
        return self.mlp(x)


class FactorizationMachineModel(nn.Module):
    def __init__(self, field_dims, embed_dim):
        super().__init__()
        self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)
        self.embedding = FeaturesEmbedding(field_dims, embed_dim)
        self.linear = FeaturesLinear(field_dims)
        self.fm = FactorizationMachine(reduce_sum=True)

    def forward(self, x):
        x = x + x.new_tensor(self.offsets).unsqueeze(0)
        x = self.linear(x) + self.fm(self.embedding(x))
        return torch.sigmoid(x.squeeze(1))


class DeepFactorizationMachineModel(nn.Module):
    def __init__(self, field_dims, embed_dim, mlp_dims, dropout):
        super().__init__()
        self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)
        self.linear = FeaturesLinear(field_dims)
        self.fm = FactorizationMachine(reduce_sum=True)
        self.embedding = FeaturesEmbedding(field_dims, embed_dim)
        self.embed_output_dim = len(field_dims) * embed_dim
        self.mlp = MultiLayerPerceptron(self.embed_output_dim, mlp_dims, dropout)

    def forward(self, x):
        x = x + x.new_tensor(self.offsets).unsqueeze(0)
        embed_x = self.embedding(x)
        x = self.linear(x) + self.fm(embed_x) + self.mlp(embed_x.view(-1, self.embed_output_dim))
        return torch.sigmoid(x.squeeze(1))


def make_clicks(field_dims, n):
    """Random categorical rows; a click when fields 0 and 1 agree in parity."""
    cols = [torch.randint(0, d, (n,)) for d in field_dims]
    x = torch.stack(cols, dim=1)
    y = ((x[:, 0] % 2) == (x[:, 1] % 2)).float()
    return x, y


def split_params(model):
    sparse, dense = [], []
    for name, p in model.named_parameters():
        (sparse if name.endswith('embedding.weight') or name.endswith('fc.weight') else dense).append(p)
    return sparse, dense


def train(model, x, y, epochs=2, batch_size=8):
    if SPARSE:
        sparse, dense = split_params(model)
        optimizers = [torch.optim.SparseAdam(sparse, lr=0.01), torch.optim.Adam(dense, lr=0.01)]
    else:
        optimizers = [torch.optim.Adam(params=model.parameters(), lr=0.01, weight_decay=1e-6)]
    criterion = torch.nn.BCELoss()
    name = type(model).__name__
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(x.size(0))
        for step, start in enumerate(range(0, x.size(0), batch_size)):
            idx = perm[start:start + batch_size]
            y_hat = model(x[idx])
            loss = criterion(y_hat, y[idx])
            model.zero_grad()
            loss.backward()
            if epoch == 0 and step == 0:
                g = model.embedding.embedding.weight.grad
                print(name, 'grad', g.is_sparse, g.layout, g.shape)
            for optimizer in optimizers:
                optimizer.step()
            print(f"{name} epoch {epoch} step {step} loss {loss.item():.6f}")
        model.eval()
        with torch.no_grad():
            p = model(x)
            acc = ((p > 0.5).float() == y).float().mean()
            print(f"{name} epoch {epoch} acc {acc.item():.4f} mean p {p.mean():.6f}")
    return model


parser = argparse.ArgumentParser()
parser.add_argument('--sparse', action='store_true')
SPARSE = False

if __name__ == "__main__":
    SPARSE = parser.parse_args().sparse
    torch.manual_seed(0)
    field_dims = [4, 6, 3]
    x, y = make_clicks(field_dims, 32)
    print(x[:3], y[:3])
    fm = train(FactorizationMachineModel(field_dims, 4), x, y)
    print(fm)
    dfm = train(DeepFactorizationMachineModel(field_dims, 4, (8, 4), 0.2), x, y)
    print(dfm)
    print(list(dfm.state_dict().keys()))
    bag = nn.EmbeddingBag(10, 3, mode='mean')
    print(bag, bag(torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 2])))
