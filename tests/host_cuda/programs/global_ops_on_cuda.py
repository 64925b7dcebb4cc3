"""Global ops on a ``placement("cuda")`` (host CUDA stand-in, fake NCCL) against one CPU
process: every layout of B and the splits for elementwise, reductions, matmul/linear, shape
ops, softmax, layer_norm, embedding, cross_entropy and a fallback (outputs and gradients on
the device); then random creation on a placement and ``rand_like`` equal one process's values
on the device."""

import itertools
import warnings

import numpy as np

import shardflow as sf
import shardflow.nn.functional as F
from shardflow.distributed import placement, sbp

from ...distributed.programs._common import spread
from ._common import close, init_nccl_world, on_cuda

S, B = sbp.split, sbp.broadcast


def run_case(mesh, name, fn, shapes, layouts, kinds=None, seed=0):
    kinds = kinds or ["float"] * len(shapes)
    g = np.random.default_rng(seed)
    arrays = [g.integers(0, 7, size=s) if k == "int" else g.standard_normal(s).astype(np.float32)
              for s, k in zip(shapes, kinds)]
    ref_in = [sf.tensor(a, requires_grad=(k == "float")) for a, k in zip(arrays, kinds)]
    ref = fn(*ref_in)
    R = np.random.default_rng(seed + 1).standard_normal(tuple(ref.shape)).astype(np.float32)
    (ref * sf.tensor(R)).sum().backward()
    for lay in layouts:
        leaves = [sf.tensor(a, device="cuda", requires_grad=(k == "float"))
                  for a, k in zip(arrays, kinds)]
        gin = [spread(t, mesh, s) for t, s in zip(leaves, lay)]  # differentiable to the leaves
        out = fn(*gin)
        assert out.is_global, (name, lay)
        on_cuda(out.to_local(), (name, lay))
        close(out.numpy(), ref.numpy(), f"{name} {lay} forward")
        (out * sf.tensor(R, device="cuda")).sum().backward()
        for t, r, k in zip(leaves, ref_in, kinds):
            if k == "float":
                on_cuda(t.grad, (name, lay, "grad"))
                close(t.grad.cpu().numpy(), r.grad.numpy(), f"{name} {lay} grad")


def one(nd):
    return [(s,) for s in [B] + [S(d) for d in range(nd)]]


def two(a, b):
    return [x + y for x, y in itertools.product(one(a), one(b))]


def main(argv):
    warnings.simplefilter("ignore")
    init_nccl_world()
    mesh = placement("cuda")
    run_case(mesh, "add", lambda x, y: x + y, [(6, 4), (6, 4)], two(2, 2))
    run_case(mesh, "mul_bcast", lambda x, b: x * b, [(6, 4), (4,)], two(2, 1))
    run_case(mesh, "sum_dim0", lambda x: x.sum(0), [(6, 4)], one(2))
    run_case(mesh, "mean_all", lambda x: x.mean(), [(6, 4)], one(2))
    run_case(mesh, "amax_dim1", lambda x: x.amax(dim=1), [(6, 4)], one(2))
    run_case(mesh, "matmul", lambda a, b: a @ b, [(6, 4), (4, 6)], two(2, 2))
    run_case(mesh, "linear", lambda x, w, b: F.linear(x, w, b), [(2, 4, 6), (4, 6), (4,)],
             [x + w + b for x in one(3)[:3] for w in one(2) for b in one(1)])
    run_case(mesh, "view", lambda x: (x.view(4, 3, 4) * 1.5).reshape(12, 4), [(4, 12)], one(2))
    run_case(mesh, "transpose", lambda x: x.transpose(0, 1).contiguous() * 2, [(4, 6)], one(2))
    run_case(mesh, "cat", lambda x, y: sf.cat([x, y], dim=0) * 3, [(4, 6), (4, 6)], two(2, 2))
    run_case(mesh, "getitem", lambda x: x[:, 1:4] * 2, [(6, 4)], one(2))
    run_case(mesh, "softmax", lambda x: F.softmax(x, dim=-1), [(6, 4)], one(2))
    run_case(mesh, "layer_norm", lambda x, w, b: F.layer_norm(x, (6,), w, b), [(2, 4, 6), (6,), (6,)],
             [x + (B, B) for x in one(3)])
    run_case(mesh, "embedding", lambda i, w: F.embedding(i, w), [(4, 5), (8, 6)],
             [i + w for i in one(2) for w in one(2)], kinds=["int", "float"])
    run_case(mesh, "cross_entropy", lambda x, t: F.cross_entropy(x, t), [(6, 8), (6,)],
             [x + t for x in one(2) for t in one(1)], kinds=["float", "int"])
    run_case(mesh, "fallback_cumsum", lambda x: x.cumsum(0) * 2, [(6, 4)], one(2))
    # creation on a placement and *_like: the same values as one process, on the device
    sf.manual_seed(7)
    ref = sf.randn(6, 4, device="cuda").cpu().numpy()
    sf.manual_seed(7)
    x = sf.randn(6, 4, placement=mesh, sbp=S(0))
    on_cuda(x.to_local(), "randn on a cuda placement")
    close(x.numpy(), ref, "randn")
    sf.manual_seed(8)
    ref = sf.rand_like(sf.zeros(6, 4, device="cuda")).cpu().numpy()
    sf.manual_seed(8)
    y = sf.rand_like(x)
    on_cuda(y.to_local(), "rand_like")
    assert y.sbp == x.sbp
    close(y.numpy(), ref, "rand_like")
