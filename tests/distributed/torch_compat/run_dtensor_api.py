"""Rank program (2 ranks): DTensor's and DeviceMesh's API on shardflow's global tensors and
placements, each call compared with torch's DTensor (CPU, gloo) in the same processes."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.distributed.torch_compat.pair import close, init_pair  # noqa: E402

r, n = init_pair()

import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402
import torch.distributed.tensor as tdt  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh as t_init_mesh  # noqa: E402

import shardflow as sf  # noqa: E402
import shardflow.distributed as sdist  # noqa: E402
import shardflow.distributed.tensor as sdt  # noqa: E402
from shardflow.distributed.device_mesh import DeviceMesh as SMesh  # noqa: E402
from shardflow.distributed.device_mesh import init_device_mesh as s_init_mesh  # noqa: E402


def raises(fn, exc, words=""):
    try:
        fn()
    except exc as e:
        assert words in str(e), (words, str(e))
        return
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


def kinds(placements):
    return [("S", p.dim) if p.is_shard() else ("R",) if p.is_replicate() else ("P",)
            for p in placements]


# ---- meshes ---------------------------------------------------------------------------------
tm, sm = t_init_mesh("cpu", (n,)), s_init_mesh("cpu", (n,))
assert isinstance(sm, SMesh)
for q in ("get_rank", "get_local_rank", "get_coordinate"):
    assert getattr(sm, q)() == getattr(tm, q)(), q
assert sm.size() == tm.size() == n and sm.ndim == tm.ndim == 1
assert tuple(sm.shape) == tuple(tm.shape) and sm.device_type == tm.device_type == "cpu"
assert sm.mesh.tolist() == tm.mesh.tolist()

for shape in ((1, n), (n, 1)):
    tm2 = t_init_mesh("cpu", shape, mesh_dim_names=("dp", "tp"))
    sm2 = s_init_mesh("cpu", shape, mesh_dim_names=("dp", "tp"))
    assert sm2.mesh_dim_names == tm2.mesh_dim_names == ("dp", "tp")
    assert sm2.ndim == tm2.ndim == 2 and tuple(sm2.shape) == tuple(tm2.shape) == shape
    assert sm2.get_rank() == tm2.get_rank() == r
    for d in ("dp", "tp", 0, 1):
        assert sm2.get_local_rank(d) == tm2.get_local_rank(d), (shape, d)
        assert sm2.size(d if isinstance(d, int) else ("dp", "tp").index(d)) == \
            tm2.size(d if isinstance(d, int) else ("dp", "tp").index(d))
    for name in ("dp", "tp"):
        ts, ss = tm2[name], sm2[name]
        assert ss.ndim == ts.ndim == 1 and ss.size() == ts.size(), (shape, name)
        assert ss.mesh_dim_names == ts.mesh_dim_names == (name,)
        assert ss.get_local_rank() == ts.get_local_rank() and ss.get_rank() == ts.get_rank()
        assert ss.mesh.tolist() == ts.mesh.tolist()
        # the dimension's group works as a dist group, with the same members as torch's
        g, tg = sm2.get_group(name), tm2.get_group(name)
        assert sdist.get_process_group_ranks(g) == tdist.get_process_group_ranks(tg)
        a = sf.tensor([float(r + 1)])
        sdist.all_reduce(a, group=g)
        b = torch.tensor([float(r + 1)])
        tdist.all_reduce(b, group=tg)
        assert a.item() == b.item(), (shape, name)
    assert sm2["dp", "tp"] is sm2
    raises(lambda: sm2.get_local_rank(), RuntimeError, "mesh_dim")
    raises(lambda: tm2.get_local_rank(), RuntimeError, "mesh_dim")

# ---- DTensor --------------------------------------------------------------------------------
X = np.arange(24, dtype=np.float32).reshape(4, 6) / 7.0
for place in ([tdt.Shard(0)], [tdt.Shard(1)], [tdt.Replicate()]):
    sp = [sdt.Shard(p.dim) if p.is_shard() else sdt.Replicate() for p in place]
    td = tdt.distribute_tensor(torch.tensor(X), tm, place)
    sd = sdt.distribute_tensor(sf.tensor(X), sm, sp)
    assert isinstance(sd, sdt.DTensor) and isinstance(td, tdt.DTensor)
    assert kinds(sd.placements) == kinds(td.placements)
    assert sd.device_mesh == sm and tuple(sd.shape) == tuple(td.shape)
    close(sd.to_local().numpy(), td.to_local().numpy(), f"{place} to_local")
    close(sd.full_tensor().numpy(), X, f"{place} full_tensor")
    for dst in ([tdt.Shard(0)], [tdt.Shard(1)], [tdt.Replicate()]):
        sdst = [sdt.Shard(p.dim) if p.is_shard() else sdt.Replicate() for p in dst]
        close(sd.redistribute(sm, sdst).to_local().numpy(),
              td.redistribute(tm, dst).to_local().numpy(), f"{place} -> {dst}")
    # placements are required, as torch 2.13 requires them
    raises(lambda: sd.redistribute(), RuntimeError, "placements is needed")
    raises(lambda: td.redistribute(), RuntimeError, "placements is needed")

local = sf.tensor(X)
assert not isinstance(local, sdt.DTensor) and not hasattr(local, "placements")
assert not isinstance(torch.tensor(X), tdt.DTensor)
raises(lambda: sdt.DTensor(), TypeError, "from_local")

# from_local: Shard (logical shape from the shards), Partial (sum on redistribute), gradients
rows = np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * r
sl = sf.tensor(rows, requires_grad=True)
tl = torch.tensor(rows, requires_grad=True)
sd = sdt.DTensor.from_local(sl, sm, [sdt.Shard(0)])
td = tdt.DTensor.from_local(tl, tm, [tdt.Shard(0)])
assert tuple(sd.shape) == tuple(td.shape) == (2 * n, 3)
W = np.linspace(-1, 1, 2 * n * 3, dtype=np.float32).reshape(2 * n, 3)
(sd.full_tensor() * sf.tensor(W)).sum().backward()
(td.full_tensor() * torch.tensor(W)).sum().backward()
close(sl.grad.numpy(), tl.grad.numpy(), "from_local gradient")
sp_ = sdt.DTensor.from_local(sf.tensor(rows), sm, [sdt.Partial()])
tp_ = tdt.DTensor.from_local(torch.tensor(rows), tm, [tdt.Partial()])
close(sp_.full_tensor().numpy(), tp_.full_tensor().numpy(), "Partial -> whole")
close(sp_.redistribute(sm, [sdt.Replicate()]).to_local().numpy(),
      tp_.redistribute(tm, [tdt.Replicate()]).to_local().numpy(), "Partial -> Replicate")
assert kinds(sdt.DTensor.from_local(sf.tensor(rows), sm).placements) == [("R",)]

# ---- nn.Parameter of a DTensor keeps its layout; its gradient gets the layout's too ---------
sw = sf.nn.Parameter(sdt.distribute_tensor(sf.tensor(X), sm, [sdt.Shard(0)]))
tw = torch.nn.Parameter(tdt.distribute_tensor(torch.tensor(X), tm, [tdt.Shard(0)]))
assert isinstance(sw, sf.nn.Parameter) and isinstance(sw, sdt.DTensor) and sw.requires_grad
assert kinds(sw.placements) == kinds(tw.placements) and tuple(sw.shape) == tuple(tw.shape)
(sw * sw).sum().backward()
(tw * tw).sum().backward()
assert isinstance(sw.grad, sdt.DTensor) and kinds(sw.grad.placements) == kinds(tw.grad.placements)
close(sw.grad.to_local().numpy(), tw.grad.to_local().numpy(), "Parameter(DTensor) grad")
sm_mod = sf.nn.Module()
sm_mod.w = sw
assert dict(sm_mod.named_parameters())["w"] is sw

# ---- distribute_tensor of a tensor that requires grad is a new leaf (gradients land in its
# .grad, not the source's); a detached DTensor made to require grad gets a DTensor .grad
for make_s, make_t in [
        (lambda: sdt.distribute_tensor(sf.tensor(X, requires_grad=True), sm, [sdt.Shard(0)]),
         lambda: tdt.distribute_tensor(torch.tensor(X, requires_grad=True), tm, [tdt.Shard(0)])),
        (lambda: sdt.distribute_tensor(sf.tensor(X), sm, [sdt.Shard(1)]).detach().requires_grad_(True),
         lambda: tdt.distribute_tensor(torch.tensor(X), tm, [tdt.Shard(1)]).detach().requires_grad_(True))]:
    sx, tx = make_s(), make_t()
    assert sx.is_leaf == tx.is_leaf is True and sx.requires_grad == tx.requires_grad is True
    (sx * sx).sum().full_tensor().backward()
    (tx * tx).sum().full_tensor().backward()
    assert isinstance(sx.grad, sdt.DTensor) and kinds(sx.grad.placements) == kinds(tx.grad.placements)
    close(sx.grad.full_tensor().numpy(), tx.grad.full_tensor().numpy(), "leaf DTensor grad")


# ---- distribute_module with PyTorch's documented partition_fn -------------------------------
def make(lib, dt):
    def shard_params(mod_name, mod, mesh):
        if isinstance(mod, lib.nn.Linear):
            for name, param in mod.named_parameters():
                dist_param = lib.nn.Parameter(dt.distribute_tensor(param, mesh, [dt.Shard(0)]))
                mod.register_parameter(name, dist_param)

    def input_fn(mod, inputs, mesh):
        return tuple(dt.DTensor.from_local(x, mesh, [dt.Replicate()]) for x in inputs)

    def output_fn(mod, outputs, mesh):
        return outputs.full_tensor()

    return shard_params, input_fn, output_fn


torch.manual_seed(0)
tmod = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
smod = sf.nn.Sequential(sf.nn.Linear(6, 4), sf.nn.ReLU(), sf.nn.Linear(4, 2))
smod.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()})
tdt.distribute_module(tmod, tm, *make(torch, tdt))
sdt.distribute_module(smod, sm, *make(sf, sdt))
for (name, tpar), (sname, spar) in zip(tmod.named_parameters(), smod.named_parameters()):
    assert name == sname and kinds(tpar.placements) == kinds(spar.placements), name
x = np.linspace(-2, 2, 18, dtype=np.float32).reshape(3, 6)
close(smod(sf.tensor(x)).numpy(), tmod(torch.tensor(x)).detach().numpy(), "distribute_module")

# ---- torch.distributed.tensor's factories ----------------------------------------------------
for fn in ("ones", "zeros"):
    s_t = getattr(sdt, fn)(4, 6, device_mesh=sm, placements=[sdt.Shard(0)])
    t_t = getattr(tdt, fn)(4, 6, device_mesh=tm, placements=[tdt.Shard(0)])
    assert kinds(s_t.placements) == kinds(t_t.placements) and tuple(s_t.shape) == (4, 6)
    close(s_t.to_local().numpy(), t_t.to_local().numpy(), fn)
s_t = sdt.full((4, 6), 2.5, device_mesh=sm, placements=[sdt.Shard(1)])
t_t = tdt.full((4, 6), 2.5, device_mesh=tm, placements=[tdt.Shard(1)])
close(s_t.to_local().numpy(), t_t.to_local().numpy(), "full")
s_t = sdt.randn(4, 6, device_mesh=sm)
assert kinds(s_t.placements) == [("R",)] and tuple(s_t.to_local().shape) == (4, 6)

print("DTENSOR API OK", r, flush=True)
