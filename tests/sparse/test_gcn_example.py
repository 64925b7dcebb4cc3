"""pygcn (Kipf & Welling's GCN, github.com/tkipf/pygcn) with its imports changed: the data
helpers, GraphConvolution and GCN as the repository writes them (``torch.FloatTensor(a, b)``
for an uninitialised weight is spelled ``torch.empty(a, b)`` here), on a random graph
normalised as pygcn normalises Cora. shardflow and torch start from the same weights and
train three Adam steps; losses, predictions and weights must agree."""

import math

import numpy as np
import scipy.sparse as sp
import torch

import shardflow


def normalize(mx):
    """Row-normalize sparse matrix (pygcn/utils.py)."""
    rowsum = np.array(mx.sum(1))
    r_inv = np.power(rowsum, -1).flatten()
    r_inv[np.isinf(r_inv)] = 0.0
    r_mat_inv = sp.diags(r_inv)
    return r_mat_inv.dot(mx)


def sparse_mx_to_torch_sparse_tensor(torch, sparse_mx):
    """Convert a scipy sparse matrix to a torch sparse tensor (pygcn/utils.py)."""
    sparse_mx = sparse_mx.tocoo().astype(np.float32)
    indices = torch.from_numpy(np.vstack((sparse_mx.row, sparse_mx.col)).astype(np.int64))
    values = torch.from_numpy(sparse_mx.data)
    shape = torch.Size(sparse_mx.shape)
    return torch.sparse.FloatTensor(indices, values, shape)


def model_classes(torch):
    Module, Parameter = torch.nn.Module, torch.nn.Parameter
    F = torch.nn.functional

    class GraphConvolution(Module):  # pygcn/layers.py
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.weight = Parameter(torch.empty(in_features, out_features))
            if bias:
                self.bias = Parameter(torch.empty(out_features))
            else:
                self.register_parameter("bias", None)
            self.reset_parameters()

        def reset_parameters(self):
            stdv = 1.0 / math.sqrt(self.weight.size(1))
            self.weight.data.uniform_(-stdv, stdv)
            if self.bias is not None:
                self.bias.data.uniform_(-stdv, stdv)

        def forward(self, input, adj):
            support = torch.mm(input, self.weight)
            output = torch.spmm(adj, support)
            if self.bias is not None:
                return output + self.bias
            return output

    class GCN(Module):  # pygcn/models.py
        def __init__(self, nfeat, nhid, nclass, dropout):
            super().__init__()
            self.gc1 = GraphConvolution(nfeat, nhid)
            self.gc2 = GraphConvolution(nhid, nclass)
            self.dropout = dropout

        def forward(self, x, adj):
            x = F.relu(self.gc1(x, adj))
            x = F.dropout(x, self.dropout, training=self.training)
            x = self.gc2(x, adj)
            return F.log_softmax(x, dim=1)

    return GCN


def _graph(n=40, nfeat=12, nclass=3, seed=0):
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, (120, 2))
    adj = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n), dtype=np.float32)
    adj = adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T > adj)  # symmetric (pygcn)
    adj = normalize(adj + sp.eye(adj.shape[0]))
    features = normalize(sp.csr_matrix((rng.random((n, nfeat)) < 0.3).astype(np.float32)))
    labels = rng.integers(0, nclass, n)
    return adj, np.array(features.todense()), labels


def _train(torch, adj_mx, features, labels, init, steps=3):
    adj = sparse_mx_to_torch_sparse_tensor(torch, adj_mx)
    x = torch.FloatTensor(features) if hasattr(torch, "FloatTensor") else torch.tensor(features, dtype=torch.float32)
    y = torch.tensor(labels)
    model = model_classes(torch)(nfeat=x.shape[1], nhid=8, nclass=int(labels.max()) + 1, dropout=0.5)
    with torch.no_grad():
        for p, v in zip(model.parameters(), init):
            p.copy_(torch.tensor(v))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for _ in range(steps):
        model.train()
        model.dropout = 0.0  # dropout masks differ between libraries; the rest is pygcn's train()
        optimizer.zero_grad()
        output = model(x, adj)
        loss_train = torch.nn.functional.nll_loss(output[:30], y[:30])
        loss_train.backward()
        optimizer.step()
        losses.append(loss_train.item())
    model.eval()
    preds = model(x, adj).max(1)[1]
    return losses, preds.numpy(), [p.detach().numpy() for p in model.parameters()]


def test_pygcn_trains_like_torch():
    adj, features, labels = _graph()
    rng = np.random.default_rng(1)
    init = [rng.uniform(-0.3, 0.3, s).astype(np.float32) for s in ((12, 8), (8,), (8, 3), (3,))]
    sf_loss, sf_pred, sf_w = _train(shardflow, adj, features, labels, init)
    th_loss, th_pred, th_w = _train(torch, adj, features, labels, init)
    np.testing.assert_allclose(sf_loss, th_loss, rtol=1e-5)
    np.testing.assert_array_equal(sf_pred, th_pred)
    for a, b in zip(sf_w, th_w):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert sf_loss[-1] < sf_loss[0]
