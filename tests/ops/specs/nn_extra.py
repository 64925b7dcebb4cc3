"""Specs for the rest of torch.nn.functional (shardflow/nn/functional_extra.py) and
``grid_sample`` (shardflow/ops/grid_sample.py): forward and backward vs torch and float64
finite differences. Everything is called as ``m.nn.functional.<name>`` in both libraries,
except ``grid_sample``, which shardflow also exports at top level."""

from shardflow.testing.opspec import Arg, OpSpec

NO_BF16 = ("float32", "float64")
X = Arg((4, 5))


def F(m):
    return m.nn.functional


def _grid(m, x, g, **kw):
    f = m.grid_sample if m.__name__ != "torch" else m.nn.functional.grid_sample
    return f(x, g, **kw)


SPECS = [
    # ---------------------------------------------------------------- losses
    OpSpec("gaussian_nll_loss", lambda m, x, t, v: F(m).gaussian_nll_loss(x, t, v), [X, X, Arg((4, 5), kind="positive")]),
    OpSpec("gaussian_nll_loss_shared_var_full", lambda m, x, t, v: F(m).gaussian_nll_loss(x, t, v, full=True,
                                                                                       reduction="sum"),
           [X, X, Arg((4,), kind="positive")]),
    OpSpec("poisson_nll_loss", lambda m, x, t: F(m).poisson_nll_loss(x, t), [X, Arg((4, 5), kind="positive", grad=False)]),
    OpSpec("poisson_nll_loss_full_counts", lambda m, x, t: F(m).poisson_nll_loss(x, t * 3, log_input=False, full=True,
                                                                                 reduction="none"),
           [Arg((4, 5), kind="positive"), Arg((4, 5), kind="positive", grad=False)]),
    OpSpec("hinge_embedding_loss", lambda m, x, t: F(m).hinge_embedding_loss(x, t.sign(), margin=0.5),
           [X, Arg((4, 5), kind="nonzero", grad=False)]),
    OpSpec("soft_margin_loss", lambda m, x, t: F(m).soft_margin_loss(x, t.sign()), [X, Arg((4, 5), kind="nonzero", grad=False)]),
    OpSpec("multilabel_soft_margin_loss", lambda m, x, t, w: F(m).multilabel_soft_margin_loss(x, (t > 0).to(x.dtype), w),
           [X, Arg((4, 5), grad=False), Arg((5,), kind="positive", grad=False)]),
    OpSpec("multi_margin_loss", lambda m, x: F(m).multi_margin_loss(x, m.tensor([0, 3, 4, 1])), [X]),
    OpSpec("multi_margin_loss_p2_weight", lambda m, x, w: F(m).multi_margin_loss(x, m.tensor([2, 0, 1, 1]), p=2,
                                                                                 margin=0.5, weight=w, reduction="none"),
           [X, Arg((5,), kind="positive", grad=False)]),
    OpSpec("multilabel_margin_loss", lambda m, x: F(m).multilabel_margin_loss(
        x, m.tensor([[3, 0, -1, 1, 1], [1, 2, 4, -1, 0], [0, 1, 2, 3, 4], [-1, 1, 2, 3, 4]])), [X]),
    # ---------------------------------------------------------------- pooling relatives
    OpSpec("lp_pool1d", lambda m, x: F(m).lp_pool1d(x, 2, 2), [Arg((2, 3, 6), kind="positive")]),
    OpSpec("lp_pool2d_ceil", lambda m, x: F(m).lp_pool2d(x, 3, 2, stride=1, ceil_mode=True), [Arg((1, 2, 4, 4), kind="positive")]),
    OpSpec("lp_pool3d", lambda m, x: F(m).lp_pool3d(x, 1.5, 2), [Arg((1, 1, 4, 4, 2), kind="positive")]),
    OpSpec("max_unpool2d", lambda m, x: F(m).max_unpool2d(*F(m).max_pool2d(x, 2, return_indices=True), 2),
           [Arg((1, 2, 4, 4), distinct=True)]),
    OpSpec("max_unpool1d_output_size", lambda m, x: F(m).max_unpool1d(*F(m).max_pool1d_with_indices(x, 2), 2,
                                                                      output_size=[7]), [Arg((2, 2, 7), distinct=True)]),
    OpSpec("max_unpool3d", lambda m, x: F(m).max_unpool3d(*F(m).max_pool3d_with_indices(x, 2), 2),
           [Arg((1, 1, 4, 2, 2), distinct=True)]),
    OpSpec("adaptive_max_pool_with_indices", lambda m, x: F(m).adaptive_max_pool2d_with_indices(x, 2)[0]
           + F(m).adaptive_max_pool1d_with_indices(x.flatten(2), 4)[0].reshape(1, 2, 2, 2), [Arg((1, 2, 4, 4), distinct=True)]),
    # ---------------------------------------------------------------- normalisation, shuffles, activations
    OpSpec("local_response_norm_3d", lambda m, x: F(m).local_response_norm(x, 3), [Arg((2, 5, 4))]),
    OpSpec("local_response_norm_4d", lambda m, x: F(m).local_response_norm(x, 2, alpha=0.1, beta=0.5, k=2.0),
           [Arg((2, 4, 3, 3))]),
    OpSpec("channel_shuffle", lambda m, x: F(m).channel_shuffle(x, 3), [Arg((2, 6, 2))]),
    OpSpec("rrelu_eval", lambda m, x: F(m).rrelu(x, 0.2, 0.4), [Arg((4, 5), kind="nonzero")]),
    OpSpec("inplace_activations", lambda m, x: F(m).celu_(x * 1) + F(m).selu_(x * 1) + F(m).threshold_(x * 1, 0.1, -2.0),
           [Arg((4, 5), kind="nonzero")]),
    OpSpec("pdist", lambda m, x: F(m).pdist(x), [X]),
    OpSpec("pdist_p1", lambda m, x: F(m).pdist(x, 1.0), [X]),
    OpSpec("affine_grid", lambda m, t: F(m).affine_grid(t, [2, 3, 4, 5], align_corners=False), [Arg((2, 2, 3))]),
    OpSpec("affine_grid_align_3d", lambda m, t: F(m).affine_grid(t, [1, 1, 2, 3, 4], align_corners=True),
           [Arg((1, 3, 4))]),
    OpSpec("upsample_deprecated", lambda m, x: F(m).upsample(x, scale_factor=2) + F(m).upsample_nearest(x, size=(4, 4))
           + F(m).upsample_bilinear(x, scale_factor=2), [Arg((1, 2, 2, 2))]),
    # ---------------------------------------------------------------- grid_sample
    OpSpec("grid_sample_bilinear", lambda m, x, g: _grid(m, x, g), [Arg((2, 3, 5, 6)), Arg((2, 4, 3, 2), kind="uniform",
                                                                                          low=-1.2, high=1.2)],
           fd_atol=1e-4, dtypes=NO_BF16, notes="torch's grid_sample has no bfloat16 CPU kernel"),
    OpSpec("grid_sample_border_align", lambda m, x, g: _grid(m, x, g, padding_mode="border", align_corners=True),
           [Arg((1, 2, 4, 4)), Arg((1, 3, 3, 2), kind="uniform", low=-1.3, high=1.3)], fd_atol=1e-4, dtypes=NO_BF16,
           notes="torch's grid_sample has no bfloat16 CPU kernel"),
    OpSpec("grid_sample_reflection", lambda m, x, g: _grid(m, x, g, padding_mode="reflection"),
           [Arg((1, 2, 4, 5)), Arg((1, 3, 3, 2), kind="uniform", low=-1.6, high=1.6)], fd_atol=1e-4, dtypes=NO_BF16,
           notes="torch's grid_sample has no bfloat16 CPU kernel"),
    OpSpec("grid_sample_nearest", lambda m, x, g: _grid(m, x, g.detach(), mode="nearest"),
           [Arg((1, 2, 4, 5)), Arg((1, 3, 3, 2), kind="uniform", low=-1.1, high=1.1, grad=False)], dtypes=NO_BF16,
           notes="torch's grid_sample has no bfloat16 CPU kernel"),
]
