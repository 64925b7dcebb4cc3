"""Module semantics vs PyTorch: registration order, dedup with weight tying, state_dict keys,
load_state_dict validation, hooks, modes, dtype moves, containers, repr."""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn


def _net(lib):
    """The same architecture written once for torch.nn and shardflow.nn."""
    m = lib.nn

    class Net(m.Module):
        def __init__(self):
            super().__init__()
            self.conv = m.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn = m.BatchNorm2d(4)
            self.blocks = m.ModuleList([m.Linear(4, 4), m.Linear(4, 4)])
            self.heads = m.ModuleDict({"a": m.Linear(4, 2), "b": m.LayerNorm(4)})
            self.seq = m.Sequential(OrderedDict(fc=m.Linear(4, 3), act=m.GELU(), drop=m.Dropout(0.1)))
            self.emb = m.Embedding(10, 4, padding_idx=0)
            self.attn = m.MultiheadAttention(4, 2, batch_first=True)
            self.gn = m.GroupNorm(2, 4)
            self.scale = m.Parameter(lib.ones(4))
            self.register_buffer("step", lib.zeros(1))
            self.register_buffer("tmp", lib.zeros(2), persistent=False)

    return Net()


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(7, 4)
        self.lm_head = nn.Linear(4, 7, bias=False)
        self.lm_head.weight = self.wte.weight


def test_state_dict_keys_and_shapes_match_torch():
    ours = _net(sf).state_dict()
    theirs = _net(torch).state_dict()
    assert list(ours.keys()) == list(theirs.keys())
    for k in theirs:
        assert tuple(ours[k].shape) == tuple(theirs[k].shape), k
        assert ours[k].dtype.name == str(theirs[k].dtype).replace("torch.", ""), k


def test_named_parameters_and_buffers_match_torch_order():
    a, b = _net(sf), _net(torch)
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
    assert [n for n, _ in a.named_buffers()] == [n for n, _ in b.named_buffers()]
    assert [n for n, _ in a.named_modules()] == [n for n, _ in b.named_modules()]
    assert [n for n, _ in a.named_children()] == [n for n, _ in b.named_children()]
    assert a.get_submodule("seq.fc") is a.seq.fc
    assert a.get_parameter("blocks.1.weight") is a.blocks[1].weight


def test_weight_tying_deduplicated():
    m = Tied()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["wte.weight"]
    assert len(list(m.parameters())) == 1
    assert list(m.state_dict().keys()) == ["wte.weight", "lm_head.weight"]  # torch keeps both
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == ["wte.weight", "lm_head.weight"]


def test_setattr_routing_and_delattr():
    m = nn.Module()
    m.w = nn.Parameter(sf.zeros(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("buf", sf.ones(3))
    m.plain = 5
    assert list(m._parameters) == ["w"] and list(m._modules) == ["sub"]
    assert list(m._buffers) == ["buf"] and "plain" in m.__dict__
    m.buf = sf.zeros(3)  # reassigning a buffer keeps it a buffer
    assert "buf" in m._buffers and float(m.buf.sum()) == 0
    with pytest.raises(TypeError, match="Parameter or None expected"):
        m.w = sf.zeros(2)
    m.w = None
    assert m._parameters["w"] is None and list(m.parameters()) == list(m.sub.parameters())
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        m.nope  # noqa: B018
    with pytest.raises(KeyError):
        m.register_buffer("plain", sf.zeros(1))


def test_parameter_shares_memory_and_repr():
    t = sf.zeros(3)
    p = nn.Parameter(t)
    assert p.requires_grad and isinstance(p, sf.Tensor)
    p.array[0] = 5
    assert float(t[0]) == 5
    assert repr(p).startswith("Parameter containing:\ntensor(")
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.array is not p.array
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and np.array_equal(r.numpy(), p.numpy())


def test_deepcopy_module_keeps_tying():
    m = copy.deepcopy(Tied())
    assert m.lm_head.weight is m.wte.weight
    assert isinstance(m.wte.weight, nn.Parameter)


def test_load_state_dict_roundtrip_and_in_place():
    a, b = _net(sf), _net(sf)
    params_before = {n: p for n, p in b.named_parameters()}
    arrays_before = {n: p.array for n, p in b.named_parameters()}
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    for n, p in b.named_parameters():
        assert p is params_before[n] and p.array is arrays_before[n]  # identity + memory kept
        np.testing.assert_array_equal(p.numpy(), a.get_parameter(n).numpy())
    np.testing.assert_array_equal(b.bn.running_var.numpy(), a.bn.running_var.numpy())


def test_load_state_dict_strict_errors_modify_nothing():
    m = nn.Sequential(OrderedDict(fc=nn.Linear(4, 4), out=nn.Linear(4, 2)))
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    sd = {k: v.numpy() + 1 for k, v in m.state_dict().items()}
    sd["fc.weight"] = np.ones((3, 4), np.float32)
    del sd["out.bias"]
    sd["extra.weight"] = np.ones(2, np.float32)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert 'Missing key(s) in state_dict: "out.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    assert ("size mismatch for fc.weight: copying a param with shape shardflow.Size([3, 4]) from "
            "checkpoint, the shape in current model is shardflow.Size([4, 4])") in msg
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])  # nothing modified
    # strict=False: missing/unexpected reported, shape mismatch still an error
    with pytest.raises(RuntimeError, match="size mismatch for fc.weight"):
        m.load_state_dict(sd, strict=False)
    sd["fc.weight"] = np.ones((4, 4), np.float32)
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["out.bias"] and res.unexpected_keys == ["extra.weight"]
    np.testing.assert_array_equal(m.fc.weight.numpy(), np.ones((4, 4)))
    np.testing.assert_array_equal(m.out.bias.numpy(), before["out.bias"])


def test_load_torch_state_dict_directly():
    tm = _net(torch)
    sm = _net(sf)
    sm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(sm.state_dict()[k].numpy(), v.numpy())
    sm.load_state_dict(tm.state_dict())  # torch tensors accepted as values too


def test_state_dict_is_detached_and_keep_vars():
    m = nn.Linear(2, 3)
    sd = m.state_dict()
    assert not sd["weight"].requires_grad and not isinstance(sd["weight"], nn.Parameter)
    assert sd["weight"].array is m.weight.array  # shares memory
    assert m.state_dict(keep_vars=True)["weight"] is m.weight


def test_train_eval_propagates():
    m = _net(sf)
    m.eval()
    assert all(not x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())


def test_to_dtype_keeps_identity():
    m = _net(sf)
    p = m.blocks[0].weight
    m.double()
    assert m.blocks[0].weight is p and p.dtype == sf.float64
    assert m.bn.num_batches_tracked.dtype == sf.int64  # ints untouched
    m.to(sf.float16)
    assert p.dtype == sf.float16 and m.bn.running_mean.dtype == sf.float16
    m.float()
    assert p.dtype == sf.float32
    with pytest.raises(TypeError, match="floating point"):
        m.to(sf.int64)


def test_zero_grad_and_requires_grad():
    m = nn.Linear(2, 2)
    m.weight.grad = sf.ones(2, 2)
    m.zero_grad(set_to_none=False)
    assert float(m.weight.grad.sum()) == 0
    m.zero_grad()
    assert m.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_apply_visits_children_first():
    order = []
    m = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
    m.apply(lambda x: order.append(type(x).__name__))
    assert order == ["Linear", "ReLU", "Sequential", "Sequential"]


class _Double(nn.Module):
    def forward(self, x, scale=1.0):
        return x * 2 * scale


def test_forward_hooks():
    m = _Double()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 10)
    h3 = m.register_forward_hook(lambda mod, args, kw, out: calls.append(kw), with_kwargs=True)
    x = sf.ones(2)
    np.testing.assert_allclose(m(x, scale=0.5).numpy(), [20, 20])
    assert calls == [{"scale": 0.5}]
    h1.remove()
    h2.remove()
    h3.remove()
    np.testing.assert_allclose(m(x).numpy(), [2, 2])
    m.register_forward_pre_hook(lambda mod, a, kw: (a, {"scale": 3.0}), with_kwargs=True)
    np.testing.assert_allclose(m(x).numpy(), [6, 6])


def test_full_backward_hook_matches_torch():
    got = {}
    t_got = {}
    ours = _Double()
    theirs = torch.nn.Module()
    theirs.forward = lambda x: x * 2  # noqa: E731
    ours.register_full_backward_hook(lambda m, gi, go: got.update(gi=gi, go=go))
    pre = []
    ours.register_full_backward_pre_hook(lambda m, go: pre.append(go))

    class TD(torch.nn.Module):
        def forward(self, x):
            return x * 2

    td = TD()
    td.register_full_backward_hook(lambda m, gi, go: t_got.update(gi=gi, go=go))
    xv = np.arange(3, dtype=np.float32)
    x = sf.tensor(xv, requires_grad=True)
    tx = torch.tensor(xv, requires_grad=True)
    (ours(x) * sf.tensor([1.0, 2.0, 3.0])).sum().backward()
    (td(tx) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(got["go"][0].numpy(), t_got["go"][0].numpy())
    np.testing.assert_allclose(got["gi"][0].numpy(), t_got["gi"][0].numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    assert len(pre) == 1
    # a hook may replace grad_input
    m2 = _Double()
    m2.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0,))
    y = sf.tensor(xv, requires_grad=True)
    m2(y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros(3))


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub._modules) == ["1", "2"]
    seq.append(nn.Tanh())
    assert list(seq._modules) == ["0", "1", "2", "3"]
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and isinstance(seq[1], nn.Linear)
    ml = nn.ModuleList([nn.ReLU()])
    ml.append(nn.Tanh())
    ml.extend([nn.GELU()])
    ml.insert(0, nn.SiLU())
    assert [type(x).__name__ for x in ml] == ["SiLU", "ReLU", "Tanh", "GELU"]
    assert isinstance(ml[1:], nn.ModuleList) and len(ml[1:]) == 3
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b"] and "b" in md and len(md) == 2
    pl = nn.ParameterList([nn.Parameter(sf.zeros(1)), sf.ones(2)])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"x": sf.zeros(2)})
    assert isinstance(pd["x"], nn.Parameter) and [n for n, _ in pd.named_parameters()] == ["x"]
    tpl = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(1)), torch.ones(2)])
    assert list(tpl.state_dict()) == list(pl.state_dict())


@pytest.mark.parametrize("build", [
    lambda m: m.Linear(3, 4, bias=False),
    lambda m: m.Conv2d(3, 8, 3, stride=2, padding=1, groups=1),
    lambda m: m.Conv1d(2, 4, 5, dilation=2, bias=False),
    lambda m: m.BatchNorm2d(8),
    lambda m: m.LayerNorm(8),
    lambda m: m.GroupNorm(2, 8),
    lambda m: m.Embedding(10, 4, padding_idx=0),
    lambda m: m.Dropout(0.2),
    lambda m: m.GELU(approximate="tanh"),
    lambda m: m.LeakyReLU(0.2),
    lambda m: m.Softmax(dim=-1),
    lambda m: m.MaxPool2d(2),
    lambda m: m.AdaptiveAvgPool2d((1, 1)),
    lambda m: m.Flatten(),
    lambda m: m.MultiheadAttention(8, 2),
    lambda m: m.Sequential(m.Linear(2, 2), m.ReLU()),
    lambda m: m.CrossEntropyLoss(),
])
def test_repr_matches_torch(build):
    assert repr(build(nn)) == repr(build(torch.nn))


def test_parameters_vector_roundtrip():
    from shardflow.nn.utils import parameters_to_vector, vector_to_parameters

    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    tm = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    m.load_state_dict(tm.state_dict())
    v = parameters_to_vector(m.parameters())
    np.testing.assert_array_equal(v.numpy(), torch.nn.utils.parameters_to_vector(tm.parameters()).detach().numpy())
    w = m[0].weight
    vector_to_parameters(v * 2, m.parameters())
    assert m[0].weight is w
    np.testing.assert_allclose(parameters_to_vector(m.parameters()).numpy(), 2 * v.numpy())


def test_full_backward_hook_warns_as_torch_when_no_input_requires_grad():
    import warnings

    for lib in (torch, sf):
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m(lib.ones(1, 2)).sum().backward()  # only the parameters need grads: warns
            m(lib.ones(1, 2, requires_grad=True)).sum().backward()  # the input needs one: silent
        got = [str(w.message) for w in caught if "Full backward hook" in str(w.message)]
        assert len(got) == 1, (lib.__name__, got)
        assert got[0].startswith("Full backward hook is firing when gradients are computed with respect "
                                 "to module outputs since no inputs require gradients.")
        assert caught[0].filename == __file__
