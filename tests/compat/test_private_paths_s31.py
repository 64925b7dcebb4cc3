"""PyTorch's private paths that public programs import, against torch 2.13: ``torch._C``'s
switches and queries, ``torch._tensor.Tensor``, ``torch._utils.is_compiling``,
``torch.utils.data._utils.{collate,worker}``, ``nn.init._no_grad_trunc_normal_``,
``nn.modules.transformer._get_activation_fn`` and ``nn.functional``'s attention helpers."""

import importlib
import warnings

import pytest
import torch

import shardflow

LIBS = pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])


def _get(lib, dotted):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join([lib.__name__, *parts[:i]]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


@LIBS
def test_c_switches_and_queries(lib):
    c = lib._C
    assert c._get_tracing_state() is None
    assert c._jit_set_profiling_executor(False) is True
    assert c._jit_set_profiling_executor(True) is False
    assert c._jit_set_profiling_mode(True) is True
    assert c._jit_override_can_fuse_on_cpu(True) is None
    assert c._jit_set_texpr_fuser_enabled(False) is None
    assert c._get_cudnn_enabled() is True
    assert c._log_api_usage_once("x") is None
    assert c.Generator is lib.Generator and c.default_generator is lib.default_generator
    c._set_grad_enabled(False)
    assert not lib.is_grad_enabled()
    c._set_grad_enabled(True)
    assert lib.is_grad_enabled()


def test_unknown_c_name_says_what_there_is():
    with pytest.raises(AttributeError, match="torch._C is PyTorch's C\\+\\+ extension"):
        shardflow._C._no_such_binding  # noqa: B018


@LIBS
def test_private_module_paths_resolve(lib):
    assert _get(lib, "_tensor.Tensor") is lib.Tensor
    with pytest.warns(UserWarning, match=r"`torch._utils.is_compiling` is deprecated"):
        assert _get(lib, "_utils.is_compiling")() is False
    collate = _get(lib, "utils.data._utils.collate.default_collate")
    assert collate([1, 2]).tolist() == [1, 2]
    assert _get(lib, "utils.data._utils.worker.get_worker_info")() is None
    act = _get(lib, "nn.modules.transformer._get_activation_fn")
    assert act("relu") is lib.nn.functional.relu and act("gelu") is lib.nn.functional.gelu
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        act("tanh")


def test_no_grad_trunc_normal_draws_torchs_values():
    torch.manual_seed(3)
    shardflow.manual_seed(3)
    t = torch.nn.init._no_grad_trunc_normal_(torch.empty(50), 0.0, 1.0, -2.0, 2.0)
    s = shardflow.nn.init._no_grad_trunc_normal_(shardflow.empty(50), 0.0, 1.0, -2.0, 2.0)
    assert s.tolist() == pytest.approx(t.tolist(), abs=1e-6)


def test_attention_helpers_match_torch():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 8), torch.randn(5, 2, 8), torch.randn(5, 2, 8)
    w, b = torch.randn(24, 8), torch.randn(24)
    sq, sk, sv, sw, sb = (shardflow.tensor(x.numpy()) for x in (q, k, v, w, b))
    for got, want in zip(shardflow.nn.functional._in_projection_packed(sq, sk, sv, sw, sb),
                         torch.nn.functional._in_projection_packed(q, k, v, w, b)):
        assert got.shape == tuple(want.shape)
        assert got.numpy() == pytest.approx(want.numpy(), abs=1e-5)
    ws = [w[:8], w[8:16], w[16:]]
    bs = [b[:8], b[8:16], b[16:]]
    ours = shardflow.nn.functional._in_projection(sq, sk, sv, *[shardflow.tensor(x.numpy()) for x in ws + bs])
    theirs = torch.nn.functional._in_projection(q, k, v, *ws, *bs)
    for got, want in zip(ours, theirs):
        assert got.numpy() == pytest.approx(want.numpy(), abs=1e-5)
    for lib in (torch, shardflow):
        F = lib.nn.functional
        mask = lib.tensor([[True, False], [False, True]])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = F._canonical_mask(mask, "attn_mask", lib.float32, "key_padding_mask", lib.float32)
        assert out.tolist() == [[float("-inf"), 0.0], [0.0, float("-inf")]] and out.dtype == lib.float32
        assert any("Support for mismatched attn_mask and key_padding_mask" in str(w.message) for w in caught)
        with pytest.raises(AssertionError, match="only bool and floating types of m are supported"):
            F._canonical_mask(lib.tensor([1]), "m", None, "o", lib.float32)
        assert F._none_or_dtype(None) is None and F._none_or_dtype(lib.ones(1)) is lib.float32
        with pytest.raises(RuntimeError, match="must be None or torch.Tensor"):
            F._none_or_dtype(3)
