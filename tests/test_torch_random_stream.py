"""torch's CPU random stream, draw for draw (``backend/random_stream.py``): after the same
``manual_seed``, creation ops, in-place fills, ``nn.init``, modules' initial weights, dropout
masks, sampling and data shuffles give torch 2.13's numbers. Integers, permutations, masks and
uniform values are bit-exact; a float32 normal value may differ from torch's in its last bit
(torch's Box-Muller uses approximate vector log/sin/cos), hence ``NORMAL_ATOL``."""

import numpy as np
import pytest
import torch

import shardflow as sf

NORMAL_ATOL = 1e-6


def _numpy(r):
    if isinstance(r, list | tuple):
        return [_numpy(x) for x in r]
    return r.detach().float().numpy() if hasattr(r, "detach") else np.asarray(r)


def _both(fn, seed=7):
    out = []
    for lib in (torch, sf):
        lib.manual_seed(seed)
        out.append(_numpy(fn(lib)))
    return out


def _assert_same(a, b, atol=0.0):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y, atol)
        return
    assert a.shape == b.shape
    if atol:
        np.testing.assert_allclose(b, a, rtol=0, atol=atol)
    else:
        np.testing.assert_array_equal(b, a)


EXACT = {
    "rand": lambda L: L.rand(3, 5),
    "rand_float64": lambda L: L.rand(17, dtype=L.float64),
    "rand_half": lambda L: L.rand(40, dtype=L.float16),
    "rand_bfloat16": lambda L: L.rand(40, dtype=L.bfloat16),
    "randn_small_then_cached": lambda L: [L.randn(7), L.randn(3)],
    "randint": lambda L: L.randint(-3, 11, (4, 6)),
    "randint_wide": lambda L: L.randint(0, 2**40, (9,)),
    "randperm": lambda L: [L.randperm(50), L.randperm(1), L.rand(2)],
    "randperm_generator": lambda L: L.randperm(10, generator=L.Generator().manual_seed(3)),
    "bernoulli_probs": lambda L: L.bernoulli(L.full((50,), 0.4)),
    "bernoulli_probs_float64": lambda L: L.bernoulli(L.full((50,), 0.4, dtype=L.float64)),
    "bernoulli_p": lambda L: L.bernoulli(L.zeros(50), p=0.3),
    "bernoulli_": lambda L: [L.empty(30).bernoulli_(0.7), L.empty(30).bernoulli_(L.full((30,), 0.2))],
    "uniform_": lambda L: L.empty(6, 7).uniform_(-0.37, 0.37),
    "uniform_transposed": lambda L: L.empty(6, 7).t().uniform_(-0.37, 0.37).contiguous(),
    "exponential_": lambda L: L.empty(10).exponential_(3.0),
    "random_": lambda L: [L.empty(10, dtype=L.int64).random_(), L.empty(10, dtype=L.int32).random_(),
                          L.empty(10).random_(), L.empty(10, dtype=L.int64).random_(5), L.empty(10).random_(-3, 9)],
    "geometric_": lambda L: L.empty(10).geometric_(0.3),
    "linear": lambda L: list(L.nn.Linear(30, 20).parameters()),
    "conv2d": lambda L: list(L.nn.Conv2d(3, 8, 3).parameters()),
    "lstm": lambda L: list(L.nn.LSTM(5, 7, 2).parameters()),
    "gru": lambda L: list(L.nn.GRU(5, 7, batch_first=True).parameters()),
    "multihead_attention": lambda L: list(L.nn.MultiheadAttention(8, 2).parameters()),
    "transformer_encoder_layer": lambda L: list(L.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).parameters()),
    "conv_transpose_bilinear": lambda L: list(L.nn.ConvTranspose2d(3, 4, 3).parameters()) + list(L.nn.Bilinear(3, 4, 5).parameters()),
    "xavier_uniform_": lambda L: L.nn.init.xavier_uniform_(L.empty(6, 9)),
    "dropout": lambda L: L.nn.functional.dropout(L.linspace(-2, 2, 240).reshape(4, 6, 10), 0.3),
    "dropout_float64": lambda L: L.nn.functional.dropout(L.linspace(-2, 2, 60, dtype=L.float64), 0.37),
    "dropout2d": lambda L: L.nn.functional.dropout2d(L.ones(2, 6, 3, 3), 0.5),
    "dropout_module_grad": lambda L: (lambda t: (L.nn.Dropout(0.4)(t).sum().backward(), t.grad)[1])(L.ones(40, requires_grad=True)),
    "multinomial": lambda L: [L.multinomial(L.tensor([0.1, 0.2, 0.7]), 1),
                              L.multinomial(L.softmax(L.linspace(-2, 2, 30).reshape(3, 10), -1), 3),
                              L.multinomial(L.softmax(L.linspace(-2, 2, 30).reshape(3, 10), -1), 5, replacement=True)],
    "random_split": lambda L: [L.tensor(s.indices) for s in L.utils.data.random_split(range(10), [0.3, 0.7])],
    "samplers": lambda L: [L.tensor(list(L.utils.data.RandomSampler(range(10), replacement=True, num_samples=40))),
                           L.tensor(list(L.utils.data.SubsetRandomSampler([3, 5, 7, 9]))),
                           L.tensor(list(L.utils.data.WeightedRandomSampler([0.1, 0.5, 0.4], 6)))],
    "dropout_and_rand_like_follow_a_transposed_layout": lambda L: [
        L.nn.functional.dropout(L.ones(6, 7).t(), 0.4), L.rand_like(L.zeros(6, 7).t()),
        L.tensor(L.rand_like(L.zeros(6, 7).t()).stride()), L.nn.functional.dropout(L.ones(6, 8)[:, ::2], 0.4)],
    "distributed_sampler": lambda L: [
        L.tensor(list((lambda s: (s.set_epoch(e), s)[1])(L.utils.data.DistributedSampler(range(11), num_replicas=3, rank=r, seed=4))))
        for e in (0, 2) for r in (0, 2)],
    "dataloader_two_epochs_then_rand": lambda L: (lambda dl: [b[0] for b in dl] + [b[0] for b in dl] + [L.rand(3)])(
        L.utils.data.DataLoader(L.utils.data.TensorDataset(L.arange(20)), batch_size=6, shuffle=True)),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_draws_equal_torchs(name):
    want, got = _both(EXACT[name])
    _assert_same(want, got)


NORMAL = {
    "randn": lambda L: L.randn(1000),
    "randn_sizes": lambda L: [L.randn(20), L.randn(37), L.randn(5, 4)],
    "randn_float64": lambda L: L.randn(37, dtype=L.float64),
    "randn_half": lambda L: L.randn(37, dtype=L.float16),
    "normal_strided": lambda L: L.empty(8, 6)[:, :3].normal_(),
    "normal_forms": lambda L: [L.normal(L.arange(20.0), 2.0), L.normal(1.0, L.arange(1.0, 21.0)),
                               L.normal(L.arange(20.0), L.arange(1.0, 21.0)), L.normal(1.0, 3.0, (5,))],
    "embedding": lambda L: list(L.nn.Embedding(50, 8).parameters()),
    "trunc_normal_": lambda L: [L.nn.init.trunc_normal_(L.empty(40, 5), std=0.02),
                                L.nn.init.trunc_normal_(L.empty(300), a=1.0, b=1.2)],
    "kaiming_normal_orthogonal_sparse": lambda L: [L.nn.init.kaiming_normal_(L.empty(6, 9), mode="fan_out"),
                                                   L.nn.init.orthogonal_(L.empty(6, 9)), L.nn.init.sparse_(L.empty(6, 9), 0.3)],
    "cauchy_log_normal": lambda L: [L.empty(10).cauchy_(), L.empty(10).log_normal_()],
    "sdpa_dropout": lambda L: L.nn.functional.scaled_dot_product_attention(*[L.linspace(-1, 1, 240).reshape(4, 6, 10)] * 3, dropout_p=0.3),
    "rrelu": lambda L: L.nn.functional.rrelu(L.linspace(-2, 2, 50), training=True),
    "randn_like_transposed": lambda L: L.randn_like(L.zeros(6, 7).t()),
    # torch's rejection samplers, element by element on its stream (sample_gamma, sample_poisson)
    "gamma_beta_dirichlet_chi2": lambda L: [
        L.distributions.Gamma(L.tensor([0.05, 0.5, 2.0, 9.0]), L.tensor([1.0, 2.0, 0.5, 1.0])).sample((4,)),
        L.distributions.Gamma(L.tensor([0.3, 7.0], dtype=L.float64), L.tensor([1.0, 1.0], dtype=L.float64)).sample((3,)),
        L.distributions.Beta(L.tensor([0.5, 2.0]), L.tensor([3.0, 0.7])).sample((5,)),
        L.distributions.Dirichlet(L.tensor([0.5, 2.0, 1.0])).sample((4,)),
        L.distributions.StudentT(L.tensor([3.0, 5.0])).sample((3,))],
    "poisson": lambda L: [L.poisson(L.tensor([0.5, 3.0, 0.0, 7.5, 10.0, 55.0, 400.0] * 3)), L.randn(3)],
    "binomial": lambda L: [L.binomial(L.tensor([5.0, 20.0, 100.0, 7.0, 50.0, 0.0, 30.0] * 3),
                                      L.tensor([0.3, 0.6, 0.5, 0.9, 0.1, 0.4, 1.0] * 3)),
                           L.distributions.Binomial(L.tensor([10.0, 80.0], dtype=L.float64),
                                                    probs=L.tensor([0.2, 0.7], dtype=L.float64)).sample((4,))],
    # MHA's batch_first output is a transposed view: dropout1's mask is drawn in memory order
    "transformer_layer_training": lambda L: L.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)(
        L.randn(2, 5, 16), src_mask=L.nn.Transformer.generate_square_subsequent_mask(5)),
}


@pytest.mark.parametrize("name", sorted(NORMAL))
def test_normal_based_draws_equal_torchs_to_the_last_bit(name):
    want, got = _both(NORMAL[name])
    _assert_same(want, got, atol=NORMAL_ATOL * (10 if name in ("cauchy_log_normal", "normal_forms", "sdpa_dropout") else 1))


def test_generator_state_round_trip_and_seeds_as_torch():
    g = sf.Generator().manual_seed(11)
    state = g.get_state()
    a = sf.randn(5, generator=g)  # 5 < 16: leaves a cached normal in the generator
    g.set_state(state)
    assert sf.randn(5, generator=g).tolist() == a.tolist()
    assert sf.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    for seed in (-1, 2**63, 2**64 - 1):  # taken modulo 2^64, as torch's
        want = torch.rand(2, generator=torch.Generator().manual_seed(seed)).tolist()
        assert sf.rand(2, generator=sf.Generator().manual_seed(seed)).tolist() == want
    with pytest.raises(ValueError):
        sf.manual_seed(2**64)


def test_rng_state_is_torchs_byte_for_byte_and_restores_across_frameworks():
    # torch's 5056-byte CPUGeneratorImplState: the seed, the twister's left/next/words and the
    # cached normal; before session 30 shardflow's state was its own JSON
    for seed in (5, 2**40 + 3):
        for lib in (torch, sf):
            lib.manual_seed(seed)
        steps = [lambda L: None, lambda L: L.randn(3), lambda L: L.rand(700), lambda L: L.rand(547)]
        for step in steps:  # fresh; a cached normal; past a twist; at the 624-word boundary
            step(torch)
            step(sf)
            np.testing.assert_array_equal(np.asarray(sf.get_rng_state()), torch.get_rng_state().numpy())
    torch.manual_seed(9)
    torch.randn(5)
    sf.set_rng_state(torch.get_rng_state())  # a state torch saved (a checkpoint's rng_state)
    np.testing.assert_array_equal(sf.randn(7).numpy(), torch.randn(7).numpy())
    with pytest.raises(ValueError, match="expected 5056 bytes"):
        sf.set_rng_state(sf.zeros(4, dtype=sf.uint8))
