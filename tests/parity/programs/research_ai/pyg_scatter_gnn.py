# ruff: noqa: E501, F401, I001, UP045  (the program's own style, kept)
"""
PyTorch Geometric (MIT licence): the pure-PyTorch graph utilities ``utils/_scatter.py``
(``scatter`` by ``scatter_add_`` / ``scatter_reduce_`` with ``include_self=False``, and
``broadcast``), ``utils/_softmax.py`` (``softmax`` over edges grouped by target node),
``utils/loop.py``'s ``add_self_loops`` and ``nn/conv/gcn_conv.py``'s ``gcn_norm``, as
published without the ``torch_scatter`` / ``ptr`` / sparse-tensor / compile branches. Around
them, GCNConv's and GATConv's propagation (gather by ``index_select`` from the source
nodes, aggregate at the target nodes) and ``global_add_pool`` / ``global_mean_pool`` /
``global_max_pool``, condensed from PyG's ``MessagePassing`` classes into plain modules;
a GIN-style sum aggregation by ``index_add_``; a 3-graph batch trained for 8 steps.
"""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor


# utils/_scatter.py
def broadcast(src: Tensor, ref: Tensor, dim: int) -> Tensor:
    size = ((1, ) * dim) + (-1, ) + ((1, ) * (ref.dim() - dim - 1))
    return src.view(size).expand_as(ref)


def scatter(src: Tensor, index: Tensor, dim: int = 0,
            dim_size: Optional[int] = None, reduce: str = 'sum') -> Tensor:
    if isinstance(index, Tensor) and index.dim() != 1:
        raise ValueError(f"The `index` argument must be one-dimensional "
                         f"(got {index.dim()} dimensions)")

    dim = src.dim() + dim if dim < 0 else dim

    if isinstance(src, Tensor) and (dim < 0 or dim >= src.dim()):
        raise ValueError(f"The `dim` argument must lay between 0 and "
                         f"{src.dim() - 1} (got {dim})")

    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0

    # For now, we maintain various different code paths, based on whether
    # the input requires gradients and whether it lays on the CPU/GPU.
    # For example, `torch_scatter` is usually faster than
    # `torch.scatter_reduce` on GPU, while `torch.scatter_reduce` is faster
    # on CPU.
    # `torch.scatter_reduce` has a faster forward implementation for
    # "min"/"max" reductions since it does not compute additional arg
    # indices, but is therefore way slower in its backward implementation.
    # More insights can be found in `test/utils/test_scatter.py`.

    size = list(src.size())
    size[dim] = dim_size

    # For "sum" and "mean" reduction, we make use of `scatter_add_`:
    if reduce == 'sum' or reduce == 'add':
        index = broadcast(index, src, dim)
        return src.new_zeros(size).scatter_add_(dim, index, src)

    if reduce == 'mean':
        count = src.new_zeros(dim_size)
        count.scatter_add_(0, index, src.new_ones(src.size(dim)))
        count = count.clamp(min=1)

        index = broadcast(index, src, dim)
        out = src.new_zeros(size).scatter_add_(dim, index, src)

        return out / broadcast(count, out, dim)

    # For "min" and "max" reduction, we prefer `scatter_reduce_` on CPU or
    # in case the input does not require gradients:
    if reduce in ['min', 'max', 'amin', 'amax']:
        index = broadcast(index, src, dim)
        return src.new_zeros(size).scatter_reduce_(
            dim, index, src, reduce=f'a{reduce[-3:]}', include_self=False)

    if reduce == 'mul':
        index = broadcast(index, src, dim)
        # We initialize with `one` here to match `scatter_mul` output:
        return src.new_ones(size).scatter_reduce_(
            dim, index, src, reduce='prod', include_self=True)

    raise ValueError(f"Encountered invalid `reduce` argument '{reduce}'")


# utils/num_nodes.py
def maybe_num_nodes(edge_index, num_nodes=None):
    if num_nodes is not None:
        return num_nodes
    return int(edge_index.max()) + 1 if edge_index.numel() > 0 else 0


# utils/_softmax.py
def softmax(src: Tensor, index: Optional[Tensor] = None, ptr: Optional[Tensor] = None,
            num_nodes: Optional[int] = None, dim: int = 0) -> Tensor:
    if index is not None:
        N = maybe_num_nodes(index, num_nodes)
        src_max = scatter(src.detach(), index, dim, dim_size=N, reduce='max')
        out = src - src_max.index_select(dim, index)
        out = out.exp()
        out_sum = scatter(out, index, dim, dim_size=N, reduce='sum') + 1e-16
        out_sum = out_sum.index_select(dim, index)
    else:
        raise NotImplementedError("'softmax' requires 'index' to be specified")

    return out / out_sum


# utils/loop.py
def add_self_loops(edge_index, edge_attr=None, fill_value=None, num_nodes=None):
    N = maybe_num_nodes(edge_index, num_nodes)
    loop_index = torch.arange(0, N, dtype=torch.long, device=edge_index.device)
    loop_index = loop_index.unsqueeze(0).repeat(2, 1)
    if edge_attr is not None:
        if fill_value is None:
            loop_attr = edge_attr.new_full((N, ) + edge_attr.size()[1:], 1.)
        else:
            loop_attr = edge_attr.new_full((N, ) + edge_attr.size()[1:], fill_value)
        edge_attr = torch.cat([edge_attr, loop_attr], dim=0)
    edge_index = torch.cat([edge_index, loop_index], dim=1)
    return edge_index, edge_attr


# nn/conv/gcn_conv.py
def gcn_norm(edge_index, edge_weight=None, num_nodes=None, improved=False,
             add_self_loops_=True, flow="source_to_target", dtype=None):
    fill_value = 2. if improved else 1.
    num_nodes = maybe_num_nodes(edge_index, num_nodes)

    if edge_weight is None:
        edge_weight = torch.ones((edge_index.size(1), ), dtype=dtype,
                                 device=edge_index.device)

    if add_self_loops_:
        edge_index, edge_weight = add_self_loops(
            edge_index, edge_weight, fill_value, num_nodes)

    row, col = edge_index[0], edge_index[1]
    idx = col if flow == 'source_to_target' else row
    deg = scatter(edge_weight, idx, dim=0, dim_size=num_nodes, reduce='sum')
    deg_inv_sqrt = deg.pow_(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float('inf'), 0)
    edge_weight = deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]

    return edge_index, edge_weight


# GCNConv / GATConv propagation, condensed
class GCNConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = torch.nn.Linear(in_channels, out_channels, bias=False)
        self.bias = torch.nn.Parameter(torch.zeros(out_channels))
        torch.nn.init.xavier_uniform_(self.lin.weight)  # PyG's glorot

    def forward(self, x, edge_index):
        edge_index, edge_weight = gcn_norm(edge_index, num_nodes=x.size(0), dtype=x.dtype)
        x = self.lin(x)
        x_j = x.index_select(0, edge_index[0])
        out = scatter(edge_weight.view(-1, 1) * x_j, edge_index[1], dim=0, dim_size=x.size(0), reduce='sum')
        return out + self.bias


class GATConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels, heads=2, negative_slope=0.2):
        super().__init__()
        self.heads, self.out_channels, self.negative_slope = heads, out_channels, negative_slope
        self.lin = torch.nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = torch.nn.Parameter(torch.zeros(heads * out_channels))
        for p in (self.lin.weight, self.att_src, self.att_dst):
            torch.nn.init.xavier_uniform_(p)

    def forward(self, x, edge_index):
        H, C = self.heads, self.out_channels
        N = x.size(0)
        edge_index, _ = add_self_loops(edge_index, num_nodes=N)
        x = self.lin(x).view(-1, H, C)
        alpha_src = (x * self.att_src).sum(dim=-1)
        alpha_dst = (x * self.att_dst).sum(dim=-1)
        src, dst = edge_index
        alpha = alpha_src.index_select(0, src) + alpha_dst.index_select(0, dst)
        alpha = F.leaky_relu(alpha, self.negative_slope)
        alpha = softmax(alpha, dst, num_nodes=N)
        out = scatter(x.index_select(0, src) * alpha.unsqueeze(-1), dst, dim=0, dim_size=N, reduce='sum')
        return out.view(-1, H * C) + self.bias, alpha


def global_add_pool(x, batch, size=None):
    return scatter(x, batch, dim=0, dim_size=size, reduce='sum')


def global_mean_pool(x, batch, size=None):
    return scatter(x, batch, dim=0, dim_size=size, reduce='mean')


def global_max_pool(x, batch, size=None):
    return scatter(x, batch, dim=0, dim_size=size, reduce='max')


class Net(torch.nn.Module):
    def __init__(self, in_channels, hidden, classes):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden)
        self.conv2 = GATConv(hidden, hidden // 2, heads=2)
        self.gin_mlp = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden))
        self.eps = torch.nn.Parameter(torch.zeros(1))
        self.out = torch.nn.Linear(3 * hidden, classes)

    def forward(self, x, edge_index, batch, num_graphs):
        x = F.relu(self.conv1(x, edge_index))
        x, alpha = self.conv2(x, edge_index)
        x = F.elu(x)
        agg = torch.zeros_like(x).index_add_(0, edge_index[1], x.index_select(0, edge_index[0]))  # GIN: sum of neighbours
        x = self.gin_mlp((1 + self.eps) * x + agg)
        pooled = torch.cat([global_add_pool(x, batch, num_graphs), global_mean_pool(x, batch, num_graphs),
                            global_max_pool(x, batch, num_graphs)], dim=-1)
        return self.out(pooled), alpha


if __name__ == "__main__":
    torch.manual_seed(0)
    # three small graphs batched as PyG's DataLoader would: node offsets and a batch vector
    edges = [torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]]),
             torch.tensor([[0, 1, 2, 0], [1, 2, 0, 2]]),
             torch.tensor([[0, 1, 3, 4, 2], [1, 0, 4, 3, 0]])]
    sizes = [4, 3, 5]
    offsets = torch.tensor([0] + sizes[:-1]).cumsum(0)
    edge_index = torch.cat([e + o for e, o in zip(edges, offsets)], dim=1)
    batch = torch.repeat_interleave(torch.arange(3), torch.tensor(sizes))
    x = torch.randn(sum(sizes), 5)
    y = torch.tensor([0, 1, 1])
    print("edge_index", edge_index.tolist())
    print("batch", batch.tolist())

    ei, ew = gcn_norm(edge_index, num_nodes=x.size(0))
    print("gcn_norm", [round(v, 5) for v in ew.tolist()])
    s = torch.tensor([1.0, 5.0, -2.0, 3.0, 0.5])
    idx = torch.tensor([0, 1, 0, 1, 3])
    for reduce in ("sum", "mean", "max", "min", "mul"):
        print("scatter", reduce, scatter(s, idx, dim_size=5, reduce=reduce).tolist())
    print("softmax", [round(v, 5) for v in softmax(s, idx).tolist()])

    model = Net(5, 8, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for step in range(8):
        optimizer.zero_grad()
        logits, alpha = model(x, edge_index, batch, 3)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} alpha[:3] {[round(v, 5) for v in alpha[:3, 0].tolist()]}")
    print("eps", model.eps.item())
    x.requires_grad_()
    grad = torch.autograd.grad((scatter(x, batch, dim=0, reduce='max') * torch.arange(5.0)).sum() + scatter(x * x, batch, dim=0, reduce='mul').sum(), x)[0]
    print("scatter grads", [round(v, 5) for v in grad[:4].reshape(-1).tolist()])
