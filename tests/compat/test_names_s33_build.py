"""Session 33's submodule names, built with torch's semantics and checked against torch 2.13:
``torch.utils.checkpoint``'s selective-checkpoint and helper names,
``nn.utils.parametrizations.orthogonal``, ``backends.cuda.sdp_kernel`` / ``SDPBackend``,
``backends.mps``'s Mac-only functions, ``testing.FileCheck`` (a refusal), and the integer cast
that no longer carries a gradient."""

import functools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.parametrizations as tparam
import torch.utils.checkpoint as tcp

import shardflow as sf
import shardflow.nn.utils.parametrizations as sparam
import shardflow.utils.checkpoint as scp


def _np(t):
    return t.detach().numpy()


# ---------------------------------------------------------------- torch.utils.checkpoint
def _block(lib):
    def f(x, w):
        return lib.nn.functional.gelu(x @ w).sin() @ w.T
    return f


@pytest.mark.parametrize("policy", ["list", "fn"])
def test_selective_checkpoint_gives_torchs_values_and_gradients(policy):
    # the reference is torch without checkpointing: selective checkpointing in torch changes
    # what is stored, never a value (and torch's version imports torch._dynamo: 3.5 s)
    a = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    w0 = np.random.RandomState(1).randn(4, 4).astype(np.float32)
    tx, tw = torch.tensor(a, requires_grad=True), torch.tensor(w0, requires_grad=True)
    ty = _block(torch)(tx, tw)
    ty.pow(2).sum().backward()
    x, w = sf.tensor(a, requires_grad=True), sf.tensor(w0, requires_grad=True)
    calls = []
    if policy == "list":
        arg = [sf.ops.aten.mm.default]
    else:
        def arg(ctx, op, *args, **kw):
            calls.append(op)
            return scp.CheckpointPolicy.MUST_SAVE
    ctx_fn = functools.partial(scp.create_selective_checkpoint_contexts, arg)
    y = scp.checkpoint(_block(sf), x, w, use_reentrant=False, context_fn=ctx_fn)
    y.pow(2).sum().backward()
    for s, t in ((y, ty), (x.grad, tx.grad), (w.grad, tw.grad)):
        np.testing.assert_allclose(_np(s), _np(t), rtol=1e-5, atol=1e-5)
    assert calls == []  # documented deviation: the policy is not consulted, everything is recomputed


def test_selective_checkpoint_refuses_what_torch_refuses():
    for cp, aten in ((tcp, torch.ops.aten), (scp, sf.ops.aten)):
        with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list of ops"):
            cp.create_selective_checkpoint_contexts(3)
        with pytest.raises(ValueError, match="Expected op in `op_list` to be an OpOverload"):
            cp.create_selective_checkpoint_contexts([aten.mm])
    assert [(p.name, p.value) for p in scp.CheckpointPolicy] == [(p.name, p.value) for p in tcp.CheckpointPolicy]
    c = scp.SelectiveCheckpointContext(is_recompute=False)
    assert c.is_recompute is False and c.op_output is None


def test_checkpoint_helpers_match_torch():
    for lib, cp in ((torch, tcp), (sf, scp)):
        x = lib.ones(2, requires_grad=True)
        out = cp.detach_variable((x, 3, lib.zeros(1)))
        assert out[0].requires_grad and out[0].grad_fn is None and out[1] == 3 and not out[2].requires_grad
        with pytest.raises(RuntimeError, match="Only tuple of tensors is supported. Got Unsupported input type: list"):
            cp.detach_variable([x])
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            cp.check_backward_validity((lib.ones(1), 2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cp.check_backward_validity((x,))
        assert cp.get_device_states(x, [lib.ones(1)]) == ([], [])
        assert cp.set_device_states([], []) is None
        assert cp.DefaultDeviceType.get_device_type() == "cpu"
        with cp.set_checkpoint_early_stop(False):
            pass
    x = sf.ones(2, requires_grad=True)  # torch's non-reentrant checkpoint imports torch._dynamo (3 s)
    with scp.set_checkpoint_early_stop(False):
        y = scp.checkpoint(lambda t: t.exp(), x, use_reentrant=False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(np.ones(2)), rtol=1e-6)


def test_checkpoint_function_apply_is_reentrant_checkpoint():
    res = []
    for lib, cp in ((torch, tcp), (sf, scp)):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = cp.CheckpointFunction.apply(lambda t: (t * t).tanh(), True, x)
        y.sum().backward()
        res.append((_np(y), x.grad.numpy()))
    for t, s in zip(*res, strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- parametrizations.orthogonal
@pytest.mark.parametrize("shape,omap,triv", [((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, True),
                                             ((4, 4), "cayley", True), ((5, 3), "householder", False),
                                             ((3, 5), "matrix_exp", True), ((3, 3), None, False)])
def test_orthogonal_matches_torch(shape, omap, triv):
    torch.manual_seed(0)
    sf.manual_seed(0)  # a non-square weight is completed with randn columns: the same draws
    tl = torch.nn.Linear(shape[1], shape[0], bias=False)
    sl = sf.nn.Linear(shape[1], shape[0], bias=False)
    sl.weight.data = sf.tensor(_np(tl.weight))
    tparam.orthogonal(tl, orthogonal_map=omap, use_trivialization=triv)
    assert sparam.orthogonal(sl, orthogonal_map=omap, use_trivialization=triv) is sl
    np.testing.assert_allclose(_np(sl.weight), _np(tl.weight), atol=1e-5)
    ts, ss = tl.state_dict(), sl.state_dict()
    assert sorted(ts) == sorted(ss)
    for k in ts:
        np.testing.assert_allclose(ss[k].numpy(), ts[k].numpy(), atol=1e-5)
    x = np.random.RandomState(0).randn(2, shape[1]).astype(np.float32)
    tl(torch.tensor(x)).pow(2).sum().backward()
    sl(sf.tensor(x)).pow(2).sum().backward()
    np.testing.assert_allclose(sl.parametrizations.weight.original.grad.numpy(),
                               tl.parametrizations.weight.original.grad.numpy(), atol=1e-4)


def test_orthogonal_errors_match_torch():
    for lib, param in ((torch, tparam), (sf, sparam)):
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"):
            param.orthogonal(lib.nn.Linear(3, 3), "bias")
        with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder"'):
            param.orthogonal(lib.nn.Linear(3, 3), orthogonal_map="qr")
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
            param.orthogonal(lib.nn.Linear(3, 3), "w")
        lin = param.orthogonal(lib.nn.Linear(3, 3), use_trivialization=False)  # registering swallows it
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            lin.weight = lib.eye(3)
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
            param.orthogonal(lib.nn.Linear(3, 3)).weight = lib.eye(2)


# ---------------------------------------------------------------- integer casts
def test_integer_cast_has_no_gradient_as_in_torch():
    for lib in (torch, sf):
        x = lib.tensor([1.5, -2.5], requires_grad=True)
        for y in (x.int(), x.long(), x.bool(), x.to(lib.int16)):
            assert not y.requires_grad and y.grad_fn is None
        assert x.double().requires_grad
        (x * x.int()).sum().backward()  # the int factor is a constant
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, -2.0])


# ---------------------------------------------------------------- backends, testing
def test_backends_cuda_sdp_kernel_and_names():
    import shardflow.backends.cuda as sc
    import shardflow.nn.attention as sa

    assert sc.SDPBackend is sa.SDPBackend
    assert {b.name: b.value for b in sc.SDPBackend} == {
        k: int(v) for k, v in torch.backends.cuda.SDPBackend.__members__.items()}
    for lib in (torch, sf):
        c = lib.backends.cuda
        with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
            with c.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
                assert (c.flash_sdp_enabled(), c.math_sdp_enabled(), c.mem_efficient_sdp_enabled(),
                        c.cudnn_sdp_enabled()) == (False, True, False, True)
        assert c.flash_sdp_enabled() and c.mem_efficient_sdp_enabled()
        assert c.is_flash_attention_available() is False
        assert c.fp16_bf16_reduction_math_sdp_allowed() is False
        c.allow_fp16_bf16_reduction_math_sdp(True)
        assert c.fp16_bf16_reduction_math_sdp_allowed() is True
        c.allow_fp16_bf16_reduction_math_sdp(False)
    q = sf.randn(1, 2, 3, 4)
    with pytest.warns(FutureWarning), sf.backends.cuda.sdp_kernel(enable_flash=False, enable_math=False):
        with pytest.raises(RuntimeError):  # no kernel left on a CPU, as in torch
            sf.nn.functional.scaled_dot_product_attention(q, q, q)


def test_backends_mps_mac_only_functions_raise_like_torch_on_linux():
    for lib in (torch, sf):
        m = lib.backends.mps
        for name in ("get_core_count", "get_name"):
            with pytest.raises(AttributeError):
                getattr(m, name)()
        with pytest.raises(RuntimeError, match="Cannot execute isOnMacOSorNewer\\(\\) without MPS backend"):
            m.is_macos13_or_newer()
        with pytest.raises(RuntimeError, match="Cannot execute isOnMacOSorNewer"):
            m.is_macos_or_newer(14, 0)


def test_testing_filecheck_refuses_with_the_alternative():
    with pytest.raises(NotImplementedError, match="TorchScript graph text.*symbolic_trace"):
        sf.testing.FileCheck()


def test_transforms_module_has_torchs_tril_helpers():
    import torch.distributions.transforms as tt

    import shardflow.distributions.transforms as st

    a = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(st.vec_to_tril_matrix(sf.tensor(a)).numpy(), tt.vec_to_tril_matrix(torch.tensor(a)).numpy())
    m = np.arange(9, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(st.tril_matrix_to_vec(sf.tensor(m)).numpy(), tt.tril_matrix_to_vec(torch.tensor(m)).numpy())


def test_backends_cuda_preferred_linalg_library_answers_like_a_cpu_build():
    for lib in (torch, sf):
        c = lib.backends.cuda
        assert c.preferred_linalg_library().name == "Default"
        assert c.preferred_linalg_library("default").name == "Default"
        with pytest.raises(RuntimeError, match="Cannot set preferred backend to cuSOLVER if PyTorch has not been compiled"):
            c.preferred_linalg_library("cusolver")
        with pytest.raises(RuntimeError, match="Cannot set preferred backend to MAGMA"):
            c.preferred_linalg_library("magma")
        with pytest.raises(RuntimeError, match="Unknown input value. Choose from: default, cusolver, magma"):
            c.preferred_linalg_library("lapack")


# ---------------------------------------------------------------- torch.func.debug_unwrap
def test_debug_unwrap_outside_and_inside_transforms():
    for lib in (torch, sf):
        t = lib.ones(2)
        assert lib.func.debug_unwrap(t) is t
        with pytest.raises(TypeError):
            lib.func.debug_unwrap(3)
    seen = []  # torch (checked by hand; its functorch import costs 2.6 s): the input's values

    def f(x):
        seen.append(sf.func.debug_unwrap(x).tolist())
        return (x * x).sum()

    np.testing.assert_array_equal(sf.func.grad(f)(sf.tensor([1.0, 2.0])).numpy(), [2.0, 4.0])
    assert seen == [[1.0, 2.0]]
    with pytest.raises(NotImplementedError, match="inside vmap.*batched tensor"):
        sf.func.vmap(sf.func.debug_unwrap)(sf.ones(3, 2))
