"""The meta device (PyTorch's ``device("meta")``; ``backend/meta.py``), against torch 2.13:
creation (no memory, no random numbers drawn), printing, module construction under
``with device("meta")``, ``Module.to_empty`` then ``reset_parameters`` (FSDP2's init pattern:
the same parameters as building on the CPU with the same seed), the ops that compute shapes,
and the refusals (data access, copies to a real device, ops without a shape rule, named)."""

import numpy as np
import pytest

import shardflow as sf
from shardflow.backend.meta import MetaArray, MetaTensorError

torch = pytest.importorskip("torch")


def _dt(t):
    return str(t.dtype).split(".")[-1]


def _same_meta(s, t, what=""):
    assert s.is_meta and t.is_meta, what
    assert tuple(s.shape) == tuple(t.shape), (what, s.shape, t.shape)
    assert _dt(s) == _dt(t), (what, s.dtype, t.dtype)
    assert str(s.device) == str(t.device) == "meta", what


CREATE = [
    ("empty", lambda lib, **kw: lib.empty(3, 4, **kw)),
    ("zeros", lambda lib, **kw: lib.zeros(2, 5, dtype=lib.float64, **kw)),
    ("ones", lambda lib, **kw: lib.ones((6,), **kw)),
    ("full", lambda lib, **kw: lib.full((2, 2), 1.5, **kw)),
    ("rand", lambda lib, **kw: lib.rand(4, 3, **kw)),
    ("randn", lambda lib, **kw: lib.randn(2, 3, 4, **kw)),
    ("randint", lambda lib, **kw: lib.randint(0, 9, (5,), **kw)),
    ("zeros_like", lambda lib, **kw: lib.zeros_like(lib.empty(2, 3, **kw))),
]


@pytest.mark.parametrize("name, make", CREATE, ids=[c[0] for c in CREATE])
def test_creation_on_meta_matches_torch_and_allocates_nothing(name, make):
    s, t = make(sf, device="meta"), make(torch, device="meta")
    _same_meta(s, t, name)
    assert isinstance(s.array, MetaArray)
    with sf.device("meta"):  # the default device, as torch's `with torch.device("meta")`
        s2 = make(sf)
    with torch.device("meta"):
        t2 = make(torch)
    _same_meta(s2, t2, name)


def test_meta_draws_no_random_numbers():
    sf.manual_seed(3)
    torch.manual_seed(3)
    for lib in (sf, torch):
        lib.randn(1000, 1000, device="meta")
        lib.rand(7, device="meta")
        lib.empty(5, 5, device="meta").uniform_()
        lib.nn.init.kaiming_uniform_(lib.empty(64, 64, device="meta"))
    np.testing.assert_array_equal(sf.randn(4).numpy(), _fresh(sf, 3).randn(4).numpy())
    np.testing.assert_array_equal(torch.randn(4).numpy(), _fresh(torch, 3).randn(4).numpy())


def _fresh(lib, seed):
    lib.manual_seed(seed)
    return lib


def test_meta_repr_is_torchs():
    def norm(text):
        return text.replace("torch.", "shardflow.")

    cases = [
        lambda lib: lib.empty(3, 4, device="meta"),
        lambda lib: lib.empty(3, 4, device="meta", dtype=lib.float64, requires_grad=True),
        lambda lib: lib.nn.Parameter(lib.empty(2, device="meta")),
        lambda lib: lib.zeros(2, 2, dtype=lib.int64, device="meta"),
    ]
    for make in cases:
        assert repr(make(sf)) == norm(repr(make(torch)))


def _modules(lib):
    return lib.nn.Sequential(
        lib.nn.Embedding(50, 8, padding_idx=0),
        lib.nn.LayerNorm(8),
        lib.nn.Linear(8, 16),
        lib.nn.GELU(),
        lib.nn.Linear(16, 4, bias=False),
    )


def test_modules_built_on_meta_match_torch():
    with sf.device("meta"):
        sm = _modules(sf)
    with torch.device("meta"):
        tm = _modules(torch)
    sp, tp = dict(sm.named_parameters()), dict(tm.named_parameters())
    assert list(sp) == list(tp)
    for k in sp:
        _same_meta(sp[k], tp[k], k)
        assert isinstance(sp[k], sf.nn.Parameter) and sp[k].requires_grad
    x_s, x_t = sf.randint(0, 50, (2, 5), device="meta"), torch.randint(0, 50, (2, 5), device="meta")
    with pytest.raises(MetaTensorError, match="op 'embedding'"):
        sm(x_s)  # an integer gather has no shape rule here
    tail_s, tail_t = sm[1:], tm[1:]
    _same_meta(tail_s(sf.empty(2, 5, 8, device="meta")), tail_t(torch.empty(2, 5, 8, device="meta")))
    assert tm(x_t).is_meta  # (torch's meta kernels go further: the embedding gather too)


def test_to_empty_then_reset_parameters_is_building_on_the_cpu():
    """FSDP2's pattern: nothing is drawn while building on meta, and reset_parameters draws
    in construction order, so the result is the CPU build with the same seed (torch too)."""
    for lib in (sf, torch):
        lib.manual_seed(7)
        direct = _modules(lib)
        lib.manual_seed(7)
        with lib.device("meta"):
            model = _modules(lib)
        held = list(model.parameters())
        assert model.to_empty(device="cpu") is model
        if lib is sf:  # shardflow fills the same Parameter objects (torch makes new ones)
            assert [id(p) for p in model.parameters()] == [id(p) for p in held]
        assert not any(p.is_meta for p in model.parameters())
        for m in model.modules():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()
        for (k, a), (_, b) in zip(model.named_parameters(), direct.named_parameters()):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=k)
    s_emb = sf.nn.Embedding(5, 3, padding_idx=1, device="meta").to_empty(device="cpu")
    s_emb.reset_parameters()
    assert (s_emb.weight.detach().numpy()[1] == 0).all()


def test_to_empty_recurse_false_and_optimizer_made_before():
    with sf.device("meta"):
        m = sf.nn.Sequential(sf.nn.Linear(3, 3))
        m.register_buffer("scale", sf.ones(3))
    m.to_empty(device="cpu", recurse=False)
    assert not m.scale.is_meta and m[0].weight.is_meta
    opt = sf.optim.SGD(m.parameters(), lr=0.1)
    m.to_empty(device="cpu")
    with sf.no_grad():
        m[0].weight.fill_(1.0)
        m[0].bias.zero_()
    m(sf.ones(2, 3)).sum().backward()
    opt.step()  # the optimizer made while the parameters were meta updates them
    np.testing.assert_allclose(m[0].weight.detach().numpy(), np.full((3, 3), 1.0 - 0.2))


SHAPE_OPS = [
    ("linear", lambda lib, x, w: lib.nn.functional.linear(x, w)),
    ("arith", lambda lib, x, w: (x * 2 + 1) / x.exp()),
    ("sum", lambda lib, x, w: x.sum(0)),
    ("mean keepdim", lambda lib, x, w: x.mean(-1, keepdim=True)),
    ("view", lambda lib, x, w: x.view(3, 2, 4)),
    ("reshape -1", lambda lib, x, w: x.reshape(-1)),
    ("transpose", lambda lib, x, w: x.transpose(0, 1)),
    ("matmul", lambda lib, x, w: x @ w.t()),
    ("softmax", lambda lib, x, w: lib.softmax(x, -1)),
    ("relu", lambda lib, x, w: lib.relu(x)),
    ("slice", lambda lib, x, w: x[1:, ::2]),
    ("cat", lambda lib, x, w: lib.cat([x, x], 0)),
    ("unsqueeze", lambda lib, x, w: x.unsqueeze(1)),
    ("to float64", lambda lib, x, w: x.to(lib.float64)),
]


@pytest.mark.parametrize("name, fn", SHAPE_OPS, ids=[o[0] for o in SHAPE_OPS])
def test_ops_compute_shapes_as_torch(name, fn):
    xs, ws = sf.empty(6, 4, device="meta"), sf.empty(5, 4, device="meta", requires_grad=True)
    xt, wt = torch.empty(6, 4, device="meta"), torch.empty(5, 4, device="meta", requires_grad=True)
    _same_meta(fn(sf, xs, ws), fn(torch, xt, wt), name)


def test_meta_refusals_name_the_problem():
    x = sf.empty(4, 3, device="meta")
    with pytest.raises(MetaTensorError, match="op 'sort'.*meta tensor.*to_empty"):
        sf.sort(x)
    with pytest.raises(MetaTensorError, match="op 'cumsum'"):
        sf.cumsum(x, 0)
    for read in (x.numpy, x.tolist, lambda: x.to("cpu"), lambda: print(x + 0) or x.sum().item()):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            read()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        sf.nn.Linear(2, 2, device="meta").to("cpu")  # torch's message: use to_empty
    with pytest.raises(RuntimeError, match="same device.*meta"):
        x + sf.ones(4, 3)
    _same_meta(x + sf.tensor(2.0), torch.empty(4, 3, device="meta") + torch.tensor(2.0))
    assert sf.ones(2).to("meta").is_meta and not sf.ones(2).is_meta
    with pytest.raises(RuntimeError, match="PyTorch is not linked with support for xla devices"):
        sf.ones(2, device=sf.device("xla"))  # named as torch allows; no tensor goes there
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, ipu"):
        sf.device("tpu")
