# ruff: noqa: I001  (the import layout of the programs modelled)
"""The ``torch.distributions`` idioms around the RL programs beside this file, printed.

Not a copy of a public file: the calls that PPO-PyTorch, pytorch-soft-actor-critic and
similar agents make on distributions, gathered so that their printout (reprs, shapes, values,
draws from a seed, validation errors) can be compared with torch's line by line:
``Categorical(logits=)`` vs ``Categorical(probs=)`` (normalised ``probs``/``logits``),
``sample((n,))`` shapes, ``Normal.log_prob`` broadcasting, ``Independent``,
``kl_divergence``, ``MultivariateNormal`` from ``torch.diag(var).unsqueeze(0)`` and from
``diag_embed``, a tanh-squashed ``TransformedDistribution``, ``batch_shape``/
``event_shape`` reprs and ``validate_args`` errors. Each draw follows a ``manual_seed``.
"""

import torch
from torch.distributions import (Bernoulli, Categorical, Independent, MultivariateNormal, Normal,
                                 TransformedDistribution, kl_divergence)
from torch.distributions.transforms import AffineTransform, TanhTransform


def show(label, fn):
    try:
        print(label, fn())
    except (ValueError, RuntimeError, NotImplementedError) as e:  # the first line of the error
        print(label, type(e).__name__, (str(e).splitlines() or [""])[0])


def main():
    torch.manual_seed(0)
    logits = torch.randn(3, 4)
    by_logits = Categorical(logits=logits)
    by_probs = Categorical(probs=torch.softmax(logits, dim=-1))
    unnormalised = Categorical(torch.tensor([2.0, 1.0, 1.0]))
    print(by_logits, by_logits.batch_shape, by_logits.event_shape, by_logits.param_shape)
    print("probs", by_logits.probs)
    print("logits", by_probs.logits)
    print("unnormalised", unnormalised.probs, unnormalised.logits)
    for dist in (by_logits, by_probs):
        torch.manual_seed(1)
        s = dist.sample((5,))
        print("sample((5,))", s.shape, s.tolist())
    torch.manual_seed(1)
    print("sample()", by_logits.sample(), by_logits.sample(torch.Size([2, 1])).shape)
    action = torch.tensor([0, 1, 2])
    print("log_prob", by_logits.log_prob(action), "entropy", by_logits.entropy())
    print("log_prob broadcast", by_logits.log_prob(torch.tensor([[0], [3]])).shape)
    print("mode", by_logits.mode, "support", by_logits.support, "rsample?", by_logits.has_rsample)

    normal = Normal(torch.zeros(3), torch.tensor([1.0, 0.5, 2.0]))
    print(normal, normal.batch_shape, normal.event_shape, normal.stddev, normal.variance)
    print("log_prob (2,1)", normal.log_prob(torch.tensor([[0.5], [1.0]])))
    print("log_prob 0-d", normal.log_prob(torch.tensor(0.3)))
    torch.manual_seed(2)
    print("rsample((2,))", normal.rsample((2,)))
    torch.manual_seed(2)
    print("sample()", normal.sample(), "cdf", normal.cdf(torch.tensor([0.5, 0.5, 0.5])))
    indep = Independent(normal, 1)
    print(indep, indep.batch_shape, indep.event_shape, indep.log_prob(torch.ones(3)), indep.entropy())
    other = Normal(torch.ones(3), 2 * torch.ones(3))
    print("kl Normal", kl_divergence(normal, other))
    print("kl Independent", kl_divergence(indep, Independent(other, 1)))
    print("kl Categorical", kl_divergence(by_logits, Categorical(logits=torch.zeros(3, 4))))

    action_var = torch.full((2,), 0.6 * 0.6)
    mvn = MultivariateNormal(torch.tensor([[0.1, -0.2]]), torch.diag(action_var).unsqueeze(dim=0))
    print(mvn, mvn.batch_shape, mvn.event_shape)
    torch.manual_seed(3)
    a = mvn.sample()
    print("mvn sample", a, mvn.log_prob(a), mvn.entropy())
    means = torch.randn(4, 2)
    batched = MultivariateNormal(means, torch.diag_embed(action_var.expand_as(means)))
    print("mvn batched", batched.log_prob(torch.zeros(4, 2)), batched.entropy())
    tril = MultivariateNormal(means, scale_tril=torch.diag_embed(action_var.expand_as(means).sqrt()))
    print("kl mvn", kl_divergence(batched, MultivariateNormal(torch.zeros(2), torch.eye(2))))
    print("mvn scale_tril", tril.log_prob(torch.ones(4, 2)))

    squashed = TransformedDistribution(Normal(torch.zeros(2), torch.ones(2)),
                                       [TanhTransform(cache_size=1), AffineTransform(0.5, 2.0)])
    torch.manual_seed(4)
    y = squashed.rsample((3,))
    print("tanh squashed", y, squashed.log_prob(y))
    loc = torch.tensor([0.3, -0.2], requires_grad=True)
    torch.manual_seed(5)
    z = Normal(loc, loc.exp()).rsample()
    z.sum().backward()
    print("rsample grad", z, loc.grad)
    torch.manual_seed(6)
    print("bernoulli", Bernoulli(logits=torch.tensor([0.3, -1.0])).sample((2,)))

    show("scale < 0:", lambda: Normal(torch.zeros(2), -torch.ones(2)))
    show("probs < 0:", lambda: Categorical(probs=torch.tensor([0.5, -0.1])))
    show("both:", lambda: Categorical(logits=torch.zeros(3), probs=torch.ones(3)))
    show("action out of range:", lambda: by_logits.log_prob(torch.tensor([0, 1, 7])))
    show("not positive definite:", lambda: MultivariateNormal(torch.zeros(2), -torch.eye(2)))
    show("bad value shape:", lambda: Normal(torch.zeros(2), torch.ones(2)).log_prob(torch.zeros(3)))
    show("no validation:", lambda: Normal(torch.zeros(1), torch.zeros(1), validate_args=False).log_prob(torch.ones(1)))
    show("rsample of Categorical:", lambda: by_logits.rsample())
    show("kl not registered:", lambda: kl_divergence(normal, by_logits))


if __name__ == "__main__":
    main()
