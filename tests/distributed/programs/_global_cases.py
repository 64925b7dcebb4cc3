"""The op x placement x sbp table of the global-tensor programs.

Every rank draws the same full inputs, computes the single-process result with plain
tensors, then lays the inputs out with each sbp combination, runs the same function on
global tensors and compares the output (gathered with ``.numpy()``) and every input's
gradient (float32, 1e-5). A layout the rule refuses (a split dim smaller than its mesh
dimension) must be refused with that reason, and is counted apart from the layouts that ran.
"""

import itertools

import numpy as np

import shardflow as sf
import shardflow.nn.functional as F
from shardflow.distributed import distribute_tensor, sbp

from ._common import close, spread

S, B, P = sbp.split, sbp.broadcast, sbp.partial_sum


def full_inputs(shapes, seed, kinds):
    g = np.random.default_rng(seed)
    out = []
    for shp, kind in zip(shapes, kinds):
        if kind == "int":
            out.append(g.integers(0, 7, size=shp))
        else:
            out.append(g.standard_normal(shp).astype(np.float32))
    return out


def refusal(shapes, lay, mesh):
    """Why laying these inputs out must be refused, or None. The documented rule: a split dim
    must be at least as large as its mesh dimension, at every level of nested splits (the
    first chunk, torch.chunk's ceil, is what the next mesh dimension splits)."""
    for shp, sbps in zip(shapes, lay):
        size = list(shp)
        for k, s in enumerate(sbps if isinstance(sbps, tuple) else (sbps,)):
            if s.is_split():
                if size[s.dim] < mesh.shape[k]:
                    return "at least as large as the mesh"
                size[s.dim] = -(-size[s.dim] // mesh.shape[k])
    return None


def run_case(name, fn, shapes, layouts, mesh, kinds=None, seed=0):
    """Every layout runs and matches one process, or is one the rule refuses: then it must
    be refused, with the reason, before any collective. Returns (ran, refused)."""
    kinds = kinds or ["float"] * len(shapes)
    arrays = full_inputs(shapes, seed, kinds)
    ref_in = [sf.tensor(a, requires_grad=(k == "float")) for a, k in zip(arrays, kinds)]
    ref = fn(*ref_in)
    R = sf.tensor(np.random.default_rng(seed + 1).standard_normal(tuple(ref.shape)).astype(np.float32))
    (ref * R).sum().backward()
    ran = refused = 0
    for lay in layouts:
        leaves = [sf.tensor(a, requires_grad=(k == "float")) for a, k in zip(arrays, kinds)]
        why = refusal(shapes, lay, mesh)
        if why is not None:
            try:
                [distribute_tensor(t, mesh, s) for t, s in zip(leaves, lay)]
            except ValueError as e:
                assert why in str(e), (name, lay, str(e))
                refused += 1
                continue
            raise AssertionError(f"{name} {lay}: laid out, but the rule refuses it ({why})")
        gin = [spread(t, mesh, s) for t, s in zip(leaves, lay)]
        assert all(g.is_global for g in gin)
        out = fn(*gin)
        assert out.is_global, (name, lay)
        close(out.numpy(), ref.numpy(), f"{name} {lay} forward")
        (out * R).sum().backward()  # R is local: taken as broadcast
        for t, r, k in zip(leaves, ref_in, kinds):
            if k == "float":
                close(t.grad.numpy(), r.grad.numpy(), f"{name} {lay} grad")
        ran += 1
    assert ran > 0, f"{name}: every layout was refused; the case checks nothing"
    return ran, refused


def sbps_for(ndim, mesh, extra=()):
    opts = [B] + [S(d) for d in range(ndim)] + list(extra)
    if mesh.ndim == 1:
        return [(o,) for o in opts]
    return [(a, b) for a in opts for b in opts][:12]


def cases(mesh):
    """Run the whole table on ``mesh``; ``"ran N refused M of K cases"``."""
    counts = []
    one = lambda nd: sbps_for(nd, mesh)  # noqa: E731
    two = lambda nd1, nd2: list(itertools.islice(itertools.product(one(nd1), one(nd2)), 0, 16))  # noqa: E731
    # elementwise, broadcasting, Partial-friendly linear ops
    counts.append(run_case("add", lambda x, y: x + y, [(7, 6), (7, 6)], two(2, 2), mesh))
    counts.append(run_case("mul_bcast", lambda x, b: x * b, [(7, 6), (6,)], two(2, 1), mesh))
    counts.append(run_case("gelu_sub", lambda x: F.gelu(x) - 2 * x, [(5, 6)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("where", lambda x, y: sf.where(x > 0, x, y), [(5, 6), (5, 6)], two(2, 2), mesh))
    # reductions
    counts.append(run_case("sum_dim0", lambda x: x.sum(0), [(7, 6)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("mean_all", lambda x: x.mean(), [(7, 6)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("amax_dim1", lambda x: x.amax(dim=1), [(7, 6)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("sum_keep", lambda x: x.sum(1, keepdim=True) * x, [(5, 6)], [(s,) for s in one(2)], mesh))
    # matmul / linear
    counts.append(run_case("matmul", lambda a, b: a @ b, [(7, 6), (6, 5)], two(2, 2), mesh))
    counts.append(run_case("bmm", lambda a, b: a @ b, [(4, 5, 6), (4, 6, 3)], two(3, 3)[:9], mesh))
    counts.append(run_case("linear", lambda x, w, b: F.linear(x, w, b), [(2, 5, 6), (7, 6), (7,)],
                  [(x, w, b) for x in one(3)[:3] for w in one(2) for b in one(1)][:14], mesh))
    # shape ops
    counts.append(run_case("view", lambda x: (x.view(4, 3, 4) * 1.5).reshape(12, 4), [(4, 12)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("transpose", lambda x: x.transpose(0, 1).contiguous() * 2, [(5, 6)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("permute", lambda x: x.permute(2, 0, 1) + 1, [(4, 5, 6)], [(s,) for s in one(3)], mesh))
    counts.append(run_case("split", lambda x: sum(p * (i + 1) for i, p in enumerate(x.split(2, dim=1))), [(5, 6)],
                  [(s,) for s in one(2)], mesh))
    counts.append(run_case("cat", lambda x, y: sf.cat([x, y], dim=0) * 3, [(4, 6), (4, 6)], two(2, 2)[:9], mesh))
    counts.append(run_case("unsqueeze_flatten", lambda x: x.unsqueeze(1).flatten(0, 1) * 2, [(6, 4)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("getitem", lambda x: x[:, 1:4] * 2, [(6, 5)], [(s,) for s in one(2)], mesh))
    # nn ops
    counts.append(run_case("softmax", lambda x: F.softmax(x, dim=-1), [(6, 5)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("log_softmax", lambda x: F.log_softmax(x, dim=0), [(6, 5)], [(s,) for s in one(2)], mesh))
    counts.append(run_case("layer_norm", lambda x, w, b: F.layer_norm(x, (6,), w, b), [(2, 4, 6), (6,), (6,)],
                  [(x, B if mesh.ndim == 1 else (B, B), B if mesh.ndim == 1 else (B, B)) for x in one(3)], mesh))
    counts.append(run_case("embedding", lambda i, w: F.embedding(i, w), [(4, 5), (7, 6)],
                  [(i, w) for i in one(2) for w in one(2)][:9], mesh, kinds=["int", "float"]))
    counts.append(run_case("cross_entropy", lambda x, t: F.cross_entropy(x, t), [(6, 7), (6,)],
                  [(x, t) for x in one(2) for t in one(1)][:9], mesh, kinds=["float", "int"]))
    counts.append(run_case("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  [(2, 4, 5, 3)] * 3, [(s, s, s) for s in one(4)], mesh))
    counts.append(run_case("conv2d", lambda x, w: F.conv2d(x, w, padding=1), [(4, 3, 5, 5), (4, 3, 3, 3)],
                  [(x, w) for x in one(4)[:2] for w in one(4)[:2]], mesh))
    counts.append(run_case("fallback_cumsum", lambda x: x.cumsum(0) * 2, [(6, 4)], [(s,) for s in one(2)], mesh))
    ran = sum(r for r, _ in counts)
    refused = sum(f for _, f in counts)
    return f"ran {ran} refused {refused} of {len(counts)} cases"
