"""Training loops written once with the module as a parameter (``torch`` or ``shardflow``,
what ``import shardflow as torch`` gives a program), fitting the compat-pass distributions by
maximum likelihood from the same initial weights and data: a mixture density network
(MixtureSameFamily of Normals), a negative-binomial count regression, a low-rank Gaussian
with learned factors, a Student-t regression, and a Dirichlet-free simplex model
(LogisticNormal). The losses at every step and the final parameters must agree with torch's
(the losses are log_prob-based, so no draws enter)."""

import numpy as np
import pytest
import torch

import shardflow

STEPS = 8


def _mdn(lib, x, y):
    nn, D = lib.nn, lib.distributions

    class MDN(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(2, 16)
            self.head = nn.Linear(16, 9)  # 3 components: logits, locs, log-scales

        def forward(self, x):
            h = lib.tanh(self.hidden(x))
            logits, loc, log_scale = self.head(h).chunk(3, dim=-1)
            mix = D.Categorical(logits=logits)
            comp = D.Normal(loc, log_scale.exp())
            return D.MixtureSameFamily(mix, comp)

    model = MDN()
    return model, lambda: -model(x).log_prob(y).mean()


def _negative_binomial(lib, x, y):
    nn, D = lib.nn, lib.distributions
    model = nn.Linear(2, 2)

    def loss():
        out = model(x)
        dist = D.NegativeBinomial(total_count=nn.functional.softplus(out[:, 0]) + 0.1, logits=out[:, 1])
        return -dist.log_prob(y.round().abs()).mean()

    return model, loss


def _low_rank(lib, x, y):
    nn, D = lib.nn, lib.distributions

    class Factors(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Parameter(lib.zeros(3))
            self.cov_factor = nn.Parameter(lib.ones(3, 2) * 0.3)
            self.log_diag = nn.Parameter(lib.zeros(3))

    model = Factors()
    data = lib.cat([x, y.unsqueeze(-1)], dim=-1)  # (n, 3)

    def loss():
        dist = D.LowRankMultivariateNormal(model.loc, model.cov_factor, model.log_diag.exp())
        return -dist.log_prob(data).mean()

    return model, loss


def _student_t(lib, x, y):
    nn, D = lib.nn, lib.distributions
    model = nn.Linear(2, 3)

    def loss():
        out = model(x)
        dist = D.StudentT(nn.functional.softplus(out[:, 0]) + 1.0, out[:, 1], out[:, 2].exp())
        return -dist.log_prob(y).mean()

    return model, loss


def _logistic_normal(lib, x, y):
    nn, D = lib.nn, lib.distributions
    model = nn.Linear(2, 4)
    target = lib.softmax(lib.stack([x[:, 0], x[:, 1], y], dim=-1), dim=-1)  # (n, 3) on the simplex

    def loss():
        out = model(x)
        dist = D.LogisticNormal(out[:, :2], out[:, 2:].exp())
        return -dist.log_prob(target).mean()

    return model, loss


PROBLEMS = [_mdn, _negative_binomial, _low_rank, _student_t, _logistic_normal]


def _run(lib, problem, x, y, init):
    model, loss_fn = problem(lib, lib.tensor(x), lib.tensor(y))
    with lib.no_grad():
        for p, a in zip(model.parameters(), init):
            p.copy_(lib.tensor(a))
    opt = lib.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("problem", PROBLEMS, ids=[p.__name__[1:] for p in PROBLEMS])
def test_fit_matches_torch_step_by_step(problem):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    y = (x @ np.array([1.5, -0.7]) + 0.3 * rng.standard_normal(64) + 2.0).astype(np.float32)
    torch.manual_seed(0)
    init_model, _ = problem(torch, torch.tensor(x), torch.tensor(y))
    init = [p.detach().numpy().copy() for p in init_model.parameters()]
    sf_losses, sf_params = _run(shardflow, problem, x, y, init)
    th_losses, th_params = _run(torch, problem, x, y, init)
    assert np.all(np.isfinite(th_losses)) and th_losses[-1] < th_losses[0]
    np.testing.assert_allclose(sf_losses, th_losses, rtol=1e-4, atol=1e-5)
    for a, b in zip(sf_params, th_params):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
