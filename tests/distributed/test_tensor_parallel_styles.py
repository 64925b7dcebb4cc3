"""Tensor-parallel styles have PyTorch 2.13's signatures, defaults and semantics (issue 27).

One MPI job of 2 ranks runs every case twice, on shardflow and on PyTorch's DTensor tensor
parallelism (torch CPU, gloo, in the same processes), from the same weights and inputs, and
checks on each rank: whether the module returns a local or a global tensor, its (local and
logical) shape and values, the parameters' and local inputs' gradients; and the single-process
computation: the local output is the output layout's chunk of one process's output, the
gradients are one process's gradients of the same total loss (each rank's loss is its local
output times its chunk of one fixed tensor C, so the ranks' losses add up to ``(C * Y).sum()``).
The same job then checks ``parallelize_module``'s dict plan (token-wise ``fnmatch`` on children,
``""``, unmatched keys warn) and ``src_data_rank`` against torch's.
"""

import inspect

import pytest

from shardflow.testing.mpi import run_mpi

torch = pytest.importorskip("torch")

HEADER = r"""
import socket, sys, warnings
from datetime import timedelta
import numpy as np
import shardflow as sf
from shardflow import comm
from shardflow.distributed import placement, distribute_tensor, sbp as S
import shardflow.distributed.tensor_parallel as sft
from shardflow.distributed.tensor_parallel import ColwiseParallel, RowwiseParallel, parallelize_module
import torch, torch.distributed as tdist
import torch.distributed.tensor as tdt
import torch.distributed.tensor.parallel as ttp
from torch.distributed._functional_collectives import AsyncCollectiveTensor

world = comm.get_world()
r, n = world.rank, world.size
port = None
if r == 0:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
port = world.broadcast_object(port, 0)
shardflow_hook = sys.excepthook
tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=r, world_size=n,
                         timeout=timedelta(seconds=60))
# torch's hook buffers the traceback around the previous hook, which aborts the MPI job
# first: the traceback would be lost, so shardflow's own hook is put back
sys.excepthook = shardflow_hook
tmesh = tdt.init_device_mesh("cpu", (n,))
p = placement("cpu", list(range(n)))

LAY = {"R": (S.Replicate(), tdt.Replicate()), "P": (S.Partial(), tdt.Partial())}
for d in (0, 1, -1):
    LAY[f"S{d}"] = (S.Shard(d), tdt.Shard(d))

def lay(v, k):  # layout spec (string / tuple / dict of them) -> shardflow (k=0) or torch (k=1)
    if isinstance(v, str):
        return LAY[v][k]
    if isinstance(v, tuple):
        return tuple(None if e is None else LAY[e][k] for e in v)
    if isinstance(v, dict):
        return {key: LAY[e][k] for key, e in v.items()}
    return v

def styles(kind, **kw):
    sf_kw = {k: lay(v, 0) if "layout" in k else v for k, v in kw.items()}
    t_kw = {k: lay(v, 1) if "layout" in k else v for k, v in kw.items()}
    return getattr(sft, kind)(**sf_kw), getattr(ttp, kind)(**t_kw)

def chunk(a, layout, rank=None):
    if layout in ("R", None):
        return a
    d = int(layout[1:])
    return np.array_split(a, n, axis=d % a.ndim)[r if rank is None else rank]

def sf_local(t):
    return (t.to_local() if t.is_global else t).detach().numpy()

def t_local(t):
    if isinstance(t, tdt.DTensor):
        t = t.to_local()
    if isinstance(t, AsyncCollectiveTensor):
        t = t.wait()
    return t.detach().numpy()

def close(a, b, what, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = float(np.abs(a.astype(np.float64) - b).max()) if a.size else 0.0
    assert err < tol, (what, err)

def copy_into(tm, sm):
    tm.load_state_dict({k: torch.tensor(v.numpy().copy()) for k, v in sm.state_dict().items()})
"""

STYLES = HEADER + r"""
class Probe(sf.nn.Module):  # records what forward receives; parameter free
    def forward(self, x, y=None):
        self.seen = (x.is_global, sf_local(x).copy())
        return x * 2 if y is None else x * 2 + y

class TProbe(torch.nn.Module):
    def forward(self, x, y=None):
        self.seen = (isinstance(x, tdt.DTensor), t_local(x).copy())
        return x * 2 if y is None else x * 2 + y

def build(spec):
    kind = spec[0]
    sf.manual_seed(0)
    if kind == "linear":
        sm, tm = sf.nn.Linear(*spec[1:]), torch.nn.Linear(*spec[1:])
    elif kind == "embedding":
        sm, tm = sf.nn.Embedding(*spec[1:]), torch.nn.Embedding(*spec[1:])
    elif kind == "ln":
        sm, tm = sf.nn.LayerNorm(spec[1]), torch.nn.LayerNorm(spec[1])
        with sf.no_grad():  # not ones: the affine part must matter
            sm.weight.copy_(sf.tensor(np.linspace(0.5, 1.5, spec[1]).astype(np.float32)))
            sm.bias.copy_(sf.tensor(np.linspace(-0.2, 0.3, spec[1]).astype(np.float32)))
    elif kind == "mlp":
        sm = sf.nn.Sequential(sf.nn.Linear(8, 16), sf.nn.GELU(), sf.nn.Linear(16, 8))
        tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8))
    else:
        return Probe(), TProbe()
    copy_into(tm, sm)
    return sm, tm

g = np.random.default_rng(7)
def data(shape, dtype):
    if dtype == "idx":
        return g.integers(0, 10, size=shape)
    return g.standard_normal(shape).astype(np.float32)

# name, module, style, input (logical shape, dtype, how each rank holds it: a local tensor laid
# out as "R"/"S<d>" or "global:<layout>"), extra keyword input, expected (global?, out layout)
CASES = [
    ("colwise default", ("linear", 8, 6), ("ColwiseParallel", {}), ((4, 8), "f", "R"), None, (False, "S-1")),
    ("colwise out R", ("linear", 8, 6), ("ColwiseParallel", {"output_layouts": "R"}), ((4, 8), "f", "R"), None, (False, "R")),
    ("colwise global out", ("linear", 8, 6), ("ColwiseParallel", {"use_local_output": False}), ((4, 8), "f", "R"), None, (True, "S-1")),
    ("colwise in S0", ("linear", 8, 6), ("ColwiseParallel", {"input_layouts": "S0"}), ((4, 8), "f", "S0"), None, (False, "S-1")),
    ("colwise global in S0", ("linear", 8, 6), ("ColwiseParallel", {}), ((4, 8), "f", "global:S0"), None, (False, "S-1")),
    ("rowwise default", ("linear", 8, 6), ("RowwiseParallel", {}), ((4, 3, 8), "f", "S-1"), None, (False, "R")),
    ("rowwise out S0 (issue 27)", ("linear", 8, 5), ("RowwiseParallel", {"output_layouts": "S0"}), ((40, 8), "f", "S-1"), None, (False, "S0")),
    ("rowwise in R", ("linear", 8, 6), ("RowwiseParallel", {"input_layouts": "R"}), ((4, 8), "f", "R"), None, (False, "R")),
    ("rowwise global out", ("linear", 8, 6), ("RowwiseParallel", {"use_local_output": False}), ((4, 8), "f", "S-1"), None, (True, "R")),
    ("rowwise global S1 out", ("linear", 8, 6), ("RowwiseParallel", {"output_layouts": "S1", "use_local_output": False}), ((2, 4, 8), "f", "S-1"), None, (True, "S1")),
    ("colwise embedding", ("embedding", 10, 6), ("ColwiseParallel", {}), ((2, 3), "idx", "R"), None, (False, "S-1")),
    ("rowwise embedding default (local idx taken as S(-1))", ("embedding", 10, 6), ("RowwiseParallel", {}), ((2, 6), "idx", "S-1"), None, (False, "R")),
    ("rowwise embedding in R, out S1", ("embedding", 10, 6), ("RowwiseParallel", {"input_layouts": "R", "output_layouts": "S1"}), ((2, 6), "idx", "R"), None, (False, "S1")),
    ("sequence parallel default", ("ln", 8), ("SequenceParallel", {}), ((2, 4, 8), "f", "S1"), None, (True, "S1")),
    ("sequence parallel local out", ("ln", 8), ("SequenceParallel", {"use_local_output": True}), ((2, 4, 8), "f", "S1"), None, (False, "S1")),
    ("sequence parallel dim 0, global in", ("ln", 8), ("SequenceParallel", {"sequence_dim": 0}), ((4, 3, 8), "f", "global:R"), None, (True, "S0")),
    ("megatron mlp", ("mlp",), None, ((4, 8), "f", "R"), None, (False, "R")),
    ("prepare input", ("probe",), ("PrepareModuleInput", {"input_layouts": "S0", "desired_input_layouts": "R"}), ((4, 6), "f", "S0"), None, (True, "R")),
    ("prepare input local", ("probe",), ("PrepareModuleInput", {"input_layouts": ("S0", None), "desired_input_layouts": ("R", None), "use_local_output": True}), ((4, 6), "f", "S0"), "arg", (False, "R")),
    ("prepare input kwargs", ("probe",), ("PrepareModuleInput", {"input_kwarg_layouts": {"y": "S1"}, "desired_input_kwarg_layouts": {"y": "R"}, "use_local_output": True}), ((4, 6), "f", "R"), "kwarg", (False, "R")),
    ("prepare output", ("probe",), ("PrepareModuleOutput", {"output_layouts": "R", "desired_output_layouts": "S0"}), ((4, 6), "f", "R"), None, (False, "S0")),
    ("prepare output global", ("probe",), ("PrepareModuleOutput", {"output_layouts": "R", "desired_output_layouts": "S0", "use_local_output": False}), ((4, 6), "f", "R"), None, (True, "S0")),
    ("prepare input output", ("probe",), ("PrepareModuleInputOutput", {"input_layouts": "S0", "desired_input_layouts": "R", "output_layouts": "R", "desired_output_layouts": "S1"}), ((4, 6), "f", "S0"), None, (False, "S1")),
]

def run_case(name, mspec, sspec, xspec, extra, expect):
    sm, tm = build(mspec)
    ref, _ = build(mspec)  # one process, whole tensors
    if sspec is None:  # Megatron's pair, PyTorch's defaults: local tensors between the layers
        s_plan = {"0": ColwiseParallel(), "2": RowwiseParallel()}
        t_plan = {"0": ttp.ColwiseParallel(), "2": ttp.RowwiseParallel()}
    else:
        s_plan, t_plan = styles(sspec[0], **sspec[1])
    parallelize_module(sm, p, s_plan)
    ttp.parallelize_module(tm, tmesh, t_plan)

    shape, dtype, held = xspec
    X = data(shape, dtype)
    grad = dtype == "f"
    if held.startswith("global:"):
        xs = distribute_tensor(sf.tensor(X), p, LAY[held[7:]][0])
        xt = tdt.distribute_tensor(torch.tensor(X), tmesh, [LAY[held[7:]][1]])
        in_layout, grad = None, False
    else:
        in_layout = held
        xl = chunk(X, held)
        xs = sf.tensor(xl.copy(), requires_grad=grad)
        xt = torch.tensor(xl.copy(), requires_grad=grad)
    args_s, args_t, kw_s, kw_t, ref_args, ref_kw = (xs,), (xt,), {}, {}, (sf.tensor(X),), {}
    if extra is not None:  # a second input: whole (left alone), or a kwarg laid out S(1) -> R
        Yin = data(shape, "f")
        yl = Yin if extra == "arg" else chunk(Yin, "S1")
        if extra == "arg":
            args_s, args_t, ref_args = args_s + (sf.tensor(yl),), args_t + (torch.tensor(yl),), ref_args + (sf.tensor(Yin),)
        else:
            kw_s, kw_t, ref_kw = {"y": sf.tensor(yl.copy())}, {"y": torch.tensor(yl.copy())}, {"y": sf.tensor(Yin)}

    out_s = sm(*args_s, **kw_s)
    out_t = tm(*args_t, **kw_t)
    want_global, out_layout = expect
    assert out_s.is_global == want_global, (name, "shardflow returns a " + ("global" if out_s.is_global else "local") + " tensor", tuple(out_s.shape))
    assert isinstance(out_t, tdt.DTensor) == want_global, (name, "torch disagrees with the expectation")
    if want_global:
        assert tuple(out_s.shape) == tuple(out_t.shape), (name, out_s.shape, out_t.shape)
    ls, lt = sf_local(out_s), t_local(out_t)
    close(ls, lt, (name, "local output vs torch"))
    Y = ref(*ref_args, **ref_kw).detach().numpy()
    close(ls, chunk(Y, out_layout), (name, "local output vs the chunk of one process's"))
    if hasattr(sm, "seen"):  # PrepareModuleInput: what forward received
        assert sm.seen[0] == tm.seen[0], (name, "forward saw global", sm.seen[0], tm.seen[0])
        close(sm.seen[1], tm.seen[1], (name, "forward's input"))

    # gradients: rank r's loss is its local output times its chunk of C
    C = np.random.default_rng(11).standard_normal(Y.shape).astype(np.float32)
    Cl = chunk(C, out_layout)
    loss_s = ((out_s.to_local() if out_s.is_global else out_s) * sf.tensor(Cl)).sum()
    lt_out = out_t.to_local() if isinstance(out_t, tdt.DTensor) else out_t
    loss_t = (lt_out * torch.tensor(Cl)).sum()
    loss_s.backward(); loss_t.backward()
    ref_x = ref_args[0]
    if grad:
        ref_x = sf.tensor(X, requires_grad=True)
        ref_args = (ref_x,) + ref_args[1:]
    (ref(*ref_args, **ref_kw) * sf.tensor(C)).sum().backward()
    tparams = dict(tm.named_parameters())
    for pname, prm in sm.named_parameters():
        tg = tparams[pname].grad
        tg = tg.full_tensor() if isinstance(tg, tdt.DTensor) else tg
        close(prm.grad.numpy(), tg.detach().numpy(), (name, pname, "grad vs torch"))
        close(prm.grad.numpy(), dict(ref.named_parameters())[pname].grad.numpy(), (name, pname, "grad vs one process"))
    if grad:
        close(xs.grad.numpy(), xt.grad.numpy(), (name, "input grad vs torch"))
        close(xs.grad.numpy(), chunk(ref_x.grad.numpy(), in_layout), (name, "input grad vs one process"))
    if r == 0:
        print("CASE", name, "ok", tuple(ls.shape), flush=True)

for case in CASES:
    run_case(*case)
tdist.destroy_process_group()
print("ALL CASES DONE", flush=True)
"""

PLANS = HEADER + r"""
def tree(nn):
    class Sub(nn.Module):
        def __init__(s):
            super().__init__(); s.fc = nn.Linear(4, 4); s.inner = nn.Sequential(nn.Linear(4, 4))
        def forward(s, x):
            return s.inner(s.fc(x))
    class Root(nn.Module):
        def __init__(s):
            super().__init__(); s.a = nn.Linear(4, 4); s.blocks = nn.ModuleList([Sub(), Sub()])
        def forward(s, x):
            return x
    return Root()

def hooked(m):  # module paths that got a forward pre-hook
    return sorted(k for k, mod in m.named_modules() if len(mod._forward_pre_hooks))

PMI = dict(input_layouts="R", desired_input_layouts="R")
for plan in ({"*": PMI}, {"blocks.*.fc": PMI}, {"blocks.1.*": PMI}, {"": PMI, "a": PMI}, {"blocks.*.inner.0": PMI}):
    sm, tm = tree(sf.nn), tree(torch.nn)
    s_plan = {k: styles("PrepareModuleInput", **v)[0] for k, v in plan.items()}
    t_plan = {k: styles("PrepareModuleInput", **v)[1] for k, v in plan.items()}
    parallelize_module(sm, p, s_plan); ttp.parallelize_module(tm, tmesh, t_plan)
    assert hooked(sm) == hooked(tm), (plan, hooked(sm), hooked(tm))
    if r == 0:
        print("PLAN", list(plan), hooked(sm), flush=True)

# a key that matches nothing is skipped with a warning (PyTorch), the others still apply
sm = tree(sf.nn)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    parallelize_module(sm, p, {"blocks.*.nope": ColwiseParallel(), "a": ColwiseParallel()})
assert any("could not be resolved" in str(w.message) and "'nope'" in str(w.message) for w in caught), [str(w.message) for w in caught]
assert sm.a.weight.is_global and not sm.blocks[0].fc.weight.is_global
print("UNMATCHED warns", flush=True) if r == 0 else None

# src_data_rank: 0 (default) cuts every rank's shard from rank 0's whole weight, None keeps
# each rank's own; ranks are seeded differently here on purpose
for src in (0, None, 1):
    sf.manual_seed(100 + r)
    sm = sf.nn.Linear(4, 6); tm = torch.nn.Linear(4, 6); copy_into(tm, sm)
    own = {k: v.numpy().copy() for k, v in sm.state_dict().items()}
    mine = {k: np.array_split(v, n, axis=0)[r] for k, v in own.items()}
    kw = {} if src == 0 else {"src_data_rank": src}
    parallelize_module(sm, p, ColwiseParallel(), **kw)
    ttp.parallelize_module(tm, tmesh, ttp.ColwiseParallel(), **kw)
    for k, v in sm.state_dict().items():
        close(v.to_local().numpy(), tm.state_dict()[k].to_local().detach().numpy(), ("src_data_rank", src, k))
        if src is None:
            close(v.to_local().numpy(), mine[k], ("own shard", k))
    w_all = world.all_gather_object(own["weight"])
    if src is not None:
        close(sm.weight.numpy(), w_all[src], ("whole weight is rank", src))
    print("SRC", src, "ok", flush=True) if r == 0 else None
tdist.destroy_process_group()
print("ALL PLANS DONE", flush=True)
"""


# Both programs in ONE launch (each launch costs ~1.2 s of start-up plus ~1.5 s of importing
# torch on every rank): the styles' cases, then the plans, on the same process groups.
_STYLES_END = 'tdist.destroy_process_group()\nprint("ALL CASES DONE", flush=True)\n'
assert STYLES.endswith(_STYLES_END) and PLANS.startswith(HEADER)
STYLES_THEN_PLANS = (STYLES[:-len(_STYLES_END)] + 'print("ALL CASES DONE", flush=True)\n'
                     + PLANS[len(HEADER):])


@pytest.fixture(scope="module")
def styles_job():
    return run_mpi(STYLES_THEN_PLANS, n=2, timeout=360, env={"SHARDFLOW_COMM_TIMEOUT": "60"})


def _case_names():
    src = STYLES[STYLES.index("CASES = ["):STYLES.index("]\n\ndef run_case")]
    return [line.split('("', 1)[1].split('"', 1)[0] for line in src.splitlines()[1:] if '("' in line]


@pytest.mark.mpi
@pytest.mark.parametrize("name", _case_names())
def test_style_matches_torch_and_one_process(styles_job, name):
    """Output type (local vs global), shape, values and gradients equal PyTorch's DTensor TP
    and one process's; e.g. RowwiseParallel(output_layouts=Shard(0)) gives the (20, 5) shard."""
    assert f"CASE {name} ok" in styles_job.stdout, styles_job.output[-6000:]


@pytest.mark.mpi
def test_issue_27_rowwise_shard0_returns_the_local_20_by_5_shard(styles_job):
    assert "CASE rowwise out S0 (issue 27) ok (20, 5)" in styles_job.stdout, styles_job.output[-6000:]


@pytest.mark.mpi
def test_styles_job_ends_cleanly(styles_job):
    styles_job.check()
    assert "ALL CASES DONE" in styles_job.stdout


@pytest.mark.mpi
def test_parallelize_module_dict_plan_and_src_data_rank_match_torch(styles_job):
    res = styles_job.check()
    assert res.stdout.count("PLAN ") == 5 and "UNMATCHED warns" in res.stdout, res.output
    assert all(f"SRC {s} ok" in res.stdout for s in (0, None, 1)), res.output
    assert "ALL PLANS DONE" in res.stdout


def _style_pairs():
    import torch.distributed.tensor.parallel as ttp

    import shardflow.distributed.tensor_parallel as sft

    names = ["ColwiseParallel", "RowwiseParallel", "SequenceParallel", "PrepareModuleInput",
             "PrepareModuleOutput", "PrepareModuleInputOutput"]
    return [(n, getattr(sft, n, None), getattr(ttp, n)) for n in names]


@pytest.mark.parametrize("name,ours,theirs", _style_pairs())
def test_constructor_signature_and_defaults_are_torchs(name, ours, theirs):
    """Every torch keyword exists with torch's kind and default (shardflow adds only
    ColwiseParallel's ``blocks``)."""
    assert ours is not None, f"shardflow.distributed.tensor_parallel has no {name}"
    mine = inspect.signature(ours.__init__).parameters
    for pname, prm in inspect.signature(theirs.__init__).parameters.items():
        assert pname in mine, (name, pname)
        assert mine[pname].kind == prm.kind, (name, pname, mine[pname].kind, prm.kind)
        assert mine[pname].default == prm.default, (name, pname, mine[pname].default, prm.default)
    extra = set(mine) - set(inspect.signature(theirs.__init__).parameters)
    assert extra <= {"blocks"}, (name, extra)


def test_parallelize_module_signature_is_torchs():
    import torch.distributed.tensor.parallel as ttp

    from shardflow.distributed.tensor_parallel import parallelize_module

    mine = inspect.signature(parallelize_module).parameters
    theirs = inspect.signature(ttp.parallelize_module).parameters
    assert list(mine) == list(theirs)
    for k, prm in theirs.items():
        assert (mine[k].kind, mine[k].default) == (prm.kind, prm.default), k


def test_style_errors_name_the_fix():
    from shardflow.distributed.sbp import Replicate, Shard
    from shardflow.distributed.tensor_parallel import PrepareModuleInput, PrepareModuleOutput

    with pytest.raises(ValueError, match="same length, got 2 and 1"):
        PrepareModuleInput(input_layouts=(Shard(0), None), desired_input_layouts=Replicate())
    with pytest.raises(ValueError, match="without desired_input_layouts"):
        PrepareModuleInput(input_layouts=Shard(0))
    with pytest.raises(TypeError, match="takes a placement"):
        PrepareModuleOutput(output_layouts="S(0)", desired_output_layouts=Replicate())


def test_parallelize_module_refusals_on_one_process():
    import shardflow as sf
    from shardflow.distributed import placement
    from shardflow.distributed.tensor_parallel import ColwiseParallel, parallelize_module

    p = placement("cpu")
    norm = sf.nn.LayerNorm(4)
    with pytest.raises(NotImplementedError, match="supports nn.Linear and nn.Embedding"):
        parallelize_module(norm, p, ColwiseParallel())
    assert not norm.weight.is_global  # refused before anything was laid out
    with pytest.raises(RuntimeError, match="needs device_mesh"):
        parallelize_module(norm, None, ColwiseParallel())
    with pytest.warns(UserWarning, match="No parallelize_plan"):
        assert parallelize_module(norm, p) is norm
    with pytest.raises(ValueError, match=r"src_data_rank must be None or a rank .* got 3"):
        parallelize_module(sf.nn.Linear(4, 4), p, ColwiseParallel(), src_data_rank=3)
