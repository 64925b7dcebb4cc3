"""Session 32's aten-level functional names against torch 2.13: ``torch.lstm``/``gru``/
``rnn_tanh``/``rnn_relu`` and their cells, ``native_layer_norm``/``native_batch_norm``/
``native_group_norm``/``native_dropout``/``native_norm``, ``norm_except_dim``, ``convolution``,
``conv_tbc``, ``grid_sampler*``, ``affine_grid_generator``, ``embedding_renorm_``, the
SyncBatchNorm building blocks (torch runs most only on CUDA: checked against ``F.batch_norm``
and its gradient) and the fake-quantize top-level names. Values and gradients."""

import numpy as np
import pytest
import torch

import shardflow as sf

rng = np.random.default_rng(0)


def _pair(*shape, grad=True, scale=1.0):
    a = (rng.standard_normal(shape) * scale).astype(np.float32)
    return sf.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _close(s, t, tol=1e-5):
    np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("mode, gates", [("lstm", 4), ("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)])
@pytest.mark.parametrize("bidirectional, batch_first, has_biases", [(False, False, True), (True, True, False)])
def test_rnn_functions_match_torch(mode, gates, bidirectional, batch_first, has_biases):
    T, B, I, H, L = 3, 2, 4, 5, 2
    D = 2 if bidirectional else 1
    params = []
    for layer in range(L):
        for _ in range(D):
            params.append(_pair(gates * H, I if layer == 0 else D * H, scale=0.4))
            params.append(_pair(gates * H, H, scale=0.4))
            if has_biases:
                params += [_pair(gates * H, scale=0.4), _pair(gates * H, scale=0.4)]
    xs, xt = _pair(*((B, T, I) if batch_first else (T, B, I)))
    hs, ht = _pair(L * D, B, H)
    ps, pt = [p[0] for p in params], [p[1] for p in params]
    if mode == "lstm":
        cs, ct = _pair(L * D, B, H)
        outs = sf.lstm(xs, (hs, cs), ps, has_biases, L, 0.0, True, bidirectional, batch_first)
        outt = torch.lstm(xt, (ht, ct), pt, has_biases, L, 0.0, True, bidirectional, batch_first)
        leaves = [(xs, xt), (hs, ht), (cs, ct)]
    else:
        outs = getattr(sf, mode)(xs, hs, ps, has_biases, L, 0.0, True, bidirectional, batch_first)
        outt = getattr(torch, mode)(xt, ht, pt, has_biases, L, 0.0, True, bidirectional, batch_first)
        leaves = [(xs, xt), (hs, ht)]
    assert len(outs) == len(outt)
    for s, t in zip(outs, outt):
        _close(s, t)
    sum(o.sum() * (k + 1) for k, o in enumerate(outs)).backward()
    sum(o.sum() * (k + 1) for k, o in enumerate(outt)).backward()
    for s, t in leaves + params:
        _close(s.grad, t.grad, 1e-4)


def test_lstm_with_projection_params_and_packed_overload_refused():
    ms, mt = sf.nn.LSTM(3, 4, proj_size=2), torch.nn.LSTM(3, 4, proj_size=2)
    mt.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ms.state_dict().items()})
    xs, xt = _pair(5, 2, 3)
    h0, c0 = sf.zeros(1, 2, 2), sf.zeros(1, 2, 4)
    outs = sf.lstm(xs, (h0, c0), list(ms.parameters()), True, 1, 0.0, False, False, False)
    outt = torch.lstm(xt, (torch.zeros(1, 2, 2), torch.zeros(1, 2, 4)), list(mt.parameters()), True, 1, 0.0,
                      False, False, False)
    for s, t in zip(outs, outt):
        _close(s, t)
    with pytest.raises(NotImplementedError, match="packed-sequence overload.*PackedSequence"):
        sf.lstm(xs.reshape(10, 3), sf.tensor([2, 2, 2, 2, 2]), (h0, c0), list(ms.parameters()), True, 1, 0.0,
                False, False)
    with pytest.raises(NotImplementedError, match="packed-sequence overload"):
        sf.lstm(xs, (h0, c0), list(ms.parameters()), True, 1, 0.0, False, False, False, batch_sizes=sf.tensor([2]))
    with pytest.raises(RuntimeError, match="expected 4 parameters.*got 3"):
        sf.gru(xs, h0, list(ms.parameters())[:3], True, 1, 0.0, False, False, False)


@pytest.mark.parametrize("mode, gates", [("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1),
                                         ("rnn_relu_cell", 1)])
def test_cells_match_torch(mode, gates):
    xs, xt = _pair(2, 3)
    hs, ht = _pair(2, 4)
    wi, wh, bi, bh = _pair(gates * 4, 3), _pair(gates * 4, 4), _pair(gates * 4), _pair(gates * 4)
    if mode == "lstm_cell":
        cs, ct = _pair(2, 4)
        outs = sf.lstm_cell(xs, (hs, cs), wi[0], wh[0], bi[0], bh[0])
        outt = torch.lstm_cell(xt, (ht, ct), wi[1], wh[1], bi[1], bh[1])
    else:
        outs = (getattr(sf, mode)(xs, hs, wi[0], wh[0], bi[0], bh[0]),)
        outt = (getattr(torch, mode)(xt, ht, wi[1], wh[1], bi[1], bh[1]),)
    for s, t in zip(outs, outt):
        _close(s, t)
    sum(o.sum() * (k + 2) for k, o in enumerate(outs)).backward()
    sum(o.sum() * (k + 2) for k, o in enumerate(outt)).backward()
    for s, t in [(xs, xt), (hs, ht), wi, wh, bi, bh]:
        _close(s.grad, t.grad, 1e-4)
    no_bias = getattr(sf, mode)(xs, (hs, cs) if mode == "lstm_cell" else hs, wi[0], wh[0])  # biases optional
    assert no_bias is not None


def test_native_norms_match_torch():
    xs, xt = _pair(4, 3, 5)
    ws, wt = _pair(5)
    outs = sf.native_layer_norm(xs, [5], ws, None, 1e-5)
    outt = torch.native_layer_norm(xt, [5], wt, None, 1e-5)
    for s, t in zip(outs, outt):
        assert s.shape == t.shape
        _close(s, t)
    assert not outs[1].requires_grad and not outs[2].requires_grad
    outs[0].sum().backward()
    outt[0].sum().backward()
    _close(xs.grad, xt.grad, 1e-4)
    _close(ws.grad, wt.grad, 1e-4)
    # batch norm, training (running stats updated in place) and evaluation (empty statistics)
    rms, rvs, rmt, rvt = sf.zeros(3), sf.ones(3), torch.zeros(3), torch.ones(3)
    outs = sf.native_batch_norm(xs, None, None, rms, rvs, True, 0.1, 1e-5)
    outt = torch.native_batch_norm(xt, None, None, rmt, rvt, True, 0.1, 1e-5)
    for s, t in [*zip(outs, outt), (rms, rmt), (rvs, rvt)]:
        _close(s, t)
    outs = sf.native_batch_norm(xs, None, None, rms, rvs, False, 0.1, 1e-5)
    outt = torch.native_batch_norm(xt, None, None, rmt, rvt, False, 0.1, 1e-5)
    assert [tuple(o.shape) for o in outs] == [tuple(o.shape) for o in outt] == [(4, 3, 5), (0,), (0,)]
    _close(outs[0], outt[0])
    outs = sf.native_group_norm(xs, None, None, 4, 3, 5, 3, 1e-5)
    outt = torch.native_group_norm(xt, None, None, 4, 3, 5, 3, 1e-5)
    for s, t in zip(outs, outt):
        assert s.shape == t.shape
        _close(s, t)
    with pytest.raises(RuntimeError, match="expected input of N=4, C=3, HxW=6"):
        sf.native_group_norm(xs, None, None, 4, 3, 6, 3, 1e-5)


def test_norm_except_dim_and_native_norm():
    xs, xt = _pair(4, 3, 5)
    for dim in (0, 1, -1):
        s, t = sf.norm_except_dim(xs, 2, dim), torch.norm_except_dim(xt, 2, dim)
        assert s.shape == t.shape
        _close(s, t)
    s, t = sf.norm_except_dim(xs, 3, 1), torch.norm_except_dim(xt, 3, 1)
    _close(s, t)
    s.sum().backward()
    t.sum().backward()
    _close(xs.grad, xt.grad, 1e-4)
    # torch 2.13 runs native_norm on sparse tensors only; shardflow's is the dense vector norm
    _close(sf.native_norm(xs), torch.linalg.vector_norm(xt))
    _close(sf.native_norm(xs, 1, [1], True, None), torch.linalg.vector_norm(xt, 1, [1], True))


def test_native_dropout_mask_and_scale():
    xs = sf.randn(200, 50, requires_grad=True)
    out, mask = sf.native_dropout(xs, 0.3, True)
    assert mask.dtype == sf.bool and abs(mask.float().mean().item() - 0.7) < 0.02
    np.testing.assert_allclose(out.detach().numpy(), (xs.detach() * mask / 0.7).numpy(), rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), (mask / 0.7).numpy(), rtol=1e-6)
    t_out, t_mask = torch.native_dropout(torch.ones(3), 0.3, False)
    out, mask = sf.native_dropout(sf.ones(3), 0.3, False)
    assert mask.tolist() == t_mask.tolist() and out.tolist() == t_out.tolist()


@pytest.mark.parametrize("nd, transposed", [(1, False), (2, False), (3, False), (2, True)])
def test_convolution_matches_torch(nd, transposed):
    xs, xt = _pair(2, 4, *([5] * nd))
    wshape = (4, 3, *([3] * nd)) if transposed else (6, 2, *([3] * nd))
    ws, wt = _pair(*wshape)
    bs, bt = _pair(6 if not transposed else 6)
    groups = 2
    stride, padding, dilation = [2] * nd, [1] * nd, [1] * nd
    out_pad = [1] * nd if transposed else [0] * nd
    if transposed:
        bs, bt = _pair(6)
    s = sf.convolution(xs, ws, bs, stride, padding, dilation, transposed, out_pad, groups)
    t = torch.convolution(xt, wt, bt, stride, padding, dilation, transposed, out_pad, groups)
    _close(s, t, 1e-4)
    s.square().sum().backward()
    t.square().sum().backward()
    for a, b in [(xs, xt), (ws, wt), (bs, bt)]:
        _close(a.grad, b.grad, 1e-3)


def test_conv_tbc_matches_torch():
    xs, xt = _pair(7, 2, 3)
    ws, wt = _pair(3, 3, 4)
    bs, bt = _pair(4)
    for f_s, f_t in [(sf.conv_tbc, torch.conv_tbc), (sf.nn.functional.conv_tbc, torch.nn.functional.conv_tbc)]:
        s, t = f_s(xs, ws, bs, 1), f_t(xt, wt, bt, 1)
        _close(s, t, 1e-5)
    s.square().sum().backward()
    t.square().sum().backward()
    for a, b in [(xs, xt), (ws, wt), (bs, bt)]:
        _close(a.grad, b.grad, 1e-4)
    with pytest.raises(RuntimeError, match="input has 3 channels but the weight expects 2"):
        sf.conv_tbc(xs, sf.zeros(3, 2, 4), bs)


@pytest.mark.parametrize("interp, pad", [(0, 0), (1, 1), (0, 2)])
def test_grid_sampler_codes_match_torch(interp, pad):
    xs, xt = _pair(1, 2, 4, 5)
    gs, gt = _pair(1, 3, 3, 2, scale=0.8)
    for name in ("grid_sampler", "grid_sampler_2d"):
        s = getattr(sf, name)(xs, gs, interp, pad, False)
        t = getattr(torch, name)(xt, gt, interp, pad, False)
        _close(s, t, 1e-4)
    s.sum().backward()
    t.sum().backward()
    _close(xs.grad, xt.grad, 1e-4)
    if interp != 1:
        _close(gs.grad, gt.grad, 1e-3)
    with pytest.raises(RuntimeError, match="grid_sampler_3d: expected a 5-dim input"):
        sf.grid_sampler_3d(xs, gs, interp, pad, False)


def test_grid_sampler_refusals_and_affine_grid_generator():
    # F.grid_sample's 5-d input and bicubic mode are not built: the same clear refusal
    with pytest.raises(NotImplementedError, match="5-D input and bicubic are not built"):
        sf.grid_sampler_3d(sf.zeros(1, 1, 3, 3, 3), sf.zeros(1, 2, 2, 2, 3), 0, 0, True)
    with pytest.raises(NotImplementedError, match="5-D input and bicubic are not built"):
        sf.grid_sampler(sf.zeros(1, 1, 3, 3), sf.zeros(1, 2, 2, 2), 2, 0, True)
    with pytest.raises(RuntimeError, match="interpolation_mode must be 0, 1 or 2"):
        sf.grid_sampler(sf.zeros(1, 1, 3, 3), sf.zeros(1, 2, 2, 2), 3, 0, True)
    ths, tht = _pair(2, 2, 3)
    for ac in (False, True):
        s = sf.affine_grid_generator(ths, [2, 1, 3, 4], ac)
        t = torch.affine_grid_generator(tht, [2, 1, 3, 4], ac)
        _close(s, t, 1e-5)
    s.sum().backward()
    t.sum().backward()
    _close(ths.grad, tht.grad, 1e-4)


def test_embedding_renorm_in_place_like_torch():
    a = (rng.standard_normal((5, 3)) * 2).astype(np.float32)
    es, et = sf.tensor(a), torch.tensor(a)
    rs = sf.embedding_renorm_(es, sf.tensor([0, 2, 2]), 1.0, 2.0)
    rt = torch.embedding_renorm_(et, torch.tensor([0, 2, 2]), 1.0, 2.0)
    assert rs is es and rt is et
    _close(es, et, 1e-6)


def test_sync_batch_norm_blocks_compose_to_batch_norm():
    # two "ranks" of a batch of 3+2 rows: gathered statistics, then forward and backward as one batch
    xs, xt = _pair(5, 3, 4)
    parts = [xs.detach()[:3], xs.detach()[3:]]
    stats = [sf.batch_norm_stats(p, 1e-5) for p in parts]
    mean = sf.stack([m for m, _ in stats])
    invstd = sf.stack([i for _, i in stats])
    rms, rvs, rmt, rvt = sf.zeros(3), sf.ones(3), torch.zeros(3), torch.ones(3)
    g_mean, g_invstd = sf.batch_norm_gather_stats_with_counts(parts[0], mean, invstd, rms, rvs, 0.1, 1e-5,
                                                              sf.tensor([12.0, 8.0]))  # elements per channel
    ws, wt = _pair(3)
    bs, bt = _pair(3)
    out = sf.cat([sf.batch_norm_elemt(p, ws, bs, g_mean, g_invstd, 1e-5) for p in parts])
    ref = torch.nn.functional.batch_norm(xt, rmt, rvt, wt, bt, True, 0.1, 1e-5)
    _close(out, ref, 1e-5)
    _close(rms, rmt)
    _close(rvs, rvt)
    # backward: the per-rank reductions, all-reduced (summed), then the element-wise gradient
    gy = rng.standard_normal((5, 3, 4)).astype(np.float32)
    (ref * torch.tensor(gy)).sum().backward()
    gys = [sf.tensor(gy[:3]), sf.tensor(gy[3:])]
    red = [sf.batch_norm_backward_reduce(g, p, g_mean, g_invstd, ws, True, True, True) for g, p in zip(gys, parts)]
    sum_dy, sum_dy_xmu = red[0][0] + red[1][0], red[0][1] + red[1][1]
    _close(red[0][2] + red[1][2], wt.grad, 1e-4)
    _close(red[0][3] + red[1][3], bt.grad, 1e-4)
    gx = sf.cat([sf.batch_norm_backward_elemt(g, p, g_mean, g_invstd, ws, sum_dy, sum_dy_xmu,
                                              sf.tensor([12, 8], dtype=sf.int32)) for g, p in zip(gys, parts)])
    _close(gx, xt.grad, 1e-4)
    assert sf.batch_norm_backward_reduce(gys[0], parts[0], g_mean, g_invstd, ws, False, False, True)[:3] == (
        None, None, None)
    # equal counts
    m2, i2 = sf.batch_norm_gather_stats(parts[0], mean[:1].repeat(2, 1), invstd[:1].repeat(2, 1), None, None,
                                        0.1, 1e-5, 12)
    _close(m2, mean[0])
    _close(i2, invstd[0], 1e-4)


def test_batch_norm_update_stats_matches_torch():
    xs, xt = _pair(4, 3, 5, grad=False)
    rms, rvs, rmt, rvt = sf.zeros(3), sf.ones(3), torch.zeros(3), torch.ones(3)
    for s, t in zip(sf.batch_norm_update_stats(xs, rms, rvs, 0.2), torch.batch_norm_update_stats(xt, rmt, rvt, 0.2)):
        _close(s, t)
    _close(rms, rmt)
    _close(rvs, rvt)


def test_fake_quantize_top_level_names_match_torch():
    xs, xt = _pair(6, 3, scale=2.0)
    s = sf.fake_quantize_per_tensor_affine(xs, 0.1, 3, 0, 255)
    t = torch.fake_quantize_per_tensor_affine(xt, 0.1, 3, 0, 255)
    _close(s, t, 1e-6)
    s.sum().backward()
    t.sum().backward()
    _close(xs.grad, xt.grad)  # straight-through inside the range, zero outside
    sc, zp = [0.1, 0.05, 0.2], [0, 2, 1]
    s = sf.fake_quantize_per_channel_affine(xs.detach(), sf.tensor(sc), sf.tensor(zp, dtype=sf.int32), 1, -128, 127)
    t = torch.fake_quantize_per_channel_affine(xt.detach(), torch.tensor(sc), torch.tensor(zp, dtype=torch.int32),
                                               1, -128, 127)
    _close(s, t, 1e-6)


def test_lobpcg_matches_torch_values_and_gradient():
    a = rng.standard_normal((9, 9))
    m = a @ a.T + np.eye(9)
    As, At = sf.tensor(m, requires_grad=True), torch.tensor(m, requires_grad=True)
    Es, Xs = sf.lobpcg(As, k=2)
    Et, Xt = torch.lobpcg(At, k=2)
    _close(Es, Et, 1e-6)
    # eigenvectors up to sign: the projectors agree
    _close(Xs @ Xs.mT, Xt @ Xt.mT, 1e-5)
    Es.sum().backward()
    Et.sum().backward()
    _close(As.grad, At.grad, 1e-5)
    _close(sf.lobpcg(As.detach(), k=2, largest=False)[0], torch.lobpcg(At.detach(), k=2, largest=False)[0], 1e-6)
    b = np.diag(rng.uniform(1, 2, 9))
    Eb, Xb = sf.lobpcg(As.detach(), k=1, B=sf.tensor(b))
    _close(Eb, torch.lobpcg(At.detach(), k=1, B=torch.tensor(b))[0], 1e-6)
    _close(sf.tensor(m) @ Xb, sf.tensor(b) @ Xb * Eb, 1e-6)  # A x = lambda B x
    assert sf.lobpcg(As.detach(), X=sf.ones(9, 2, dtype=sf.float64))[0].shape == (2,)
    with pytest.raises(ValueError, match=r"smaller than 3 x the number of requested eigenpairs \(=4\)"):
        torch.lobpcg(At.detach(), k=4)
    with pytest.raises(ValueError, match=r"smaller than 3 x the number of requested eigenpairs \(=4\)"):
        sf.lobpcg(As.detach(), k=4)
    with pytest.raises(NotImplementedError, match="tracker.*expected tracker=None"):
        sf.lobpcg(As.detach(), k=1, tracker=print)


def test_rnn_dropout_between_layers_only_in_training():
    xs = sf.randn(3, 2, 4)
    hs = sf.zeros(2, 2, 5)
    params = [sf.randn(*shape) * 0.4 for shape in [(15, 4), (15, 5), (15,), (15,), (15, 5), (15, 5), (15,), (15,)]]
    plain = sf.gru(xs, hs, params, True, 2, 0.0, True, False, False)[0]
    evaluated = sf.gru(xs, hs, params, True, 2, 0.9, False, False, False)[0]
    assert np.array_equal(plain.numpy(), evaluated.numpy())
    sf.manual_seed(0)
    trained = sf.gru(xs, hs, params, True, 2, 0.9, True, False, False)[0]
    assert not np.allclose(plain.numpy(), trained.numpy())
