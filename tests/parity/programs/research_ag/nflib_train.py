# ruff: noqa: F401, E402, I001, UP031  (the notebook's own style, kept)
"""
karpathy/pytorch-normalizing-flows, ``nflib1.ipynb``: the training cells, as a script.
The notebook picks one flow by (un)commenting; here three run one after another (RealNVP on
a Logistic prior, MAF and the neural-spline coupling flow with ActNorm and
Invertible1x1Conv on a MultivariateNormal prior). Shrunk: 40 steps each (1000), the loss
printed every 10 (100); the plots become printed statistics. Data: the notebook's
``DatasetMixture`` (4 Gaussians from ``np.random.randn``).
"""
import itertools

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions import MultivariateNormal, Uniform, TransformedDistribution, SigmoidTransform

from nflib import (
    AffineConstantFlow, ActNorm, AffineHalfFlow, MAF, NormalizingFlowModel, Invertible1x1Conv,
    NSF_CL,
)


class DatasetMixture:
    """ 4 mixture of gaussians """
    def sample(self, n):
        assert n%4 == 0
        r = np.r_[np.random.randn(n // 4, 2)*0.5 + np.array([0, -2]),
                  np.random.randn(n // 4, 2)*0.5 + np.array([0, 0]),
                  np.random.randn(n // 4, 2)*0.5 + np.array([2, 2]),
                  np.random.randn(n // 4, 2)*0.5 + np.array([-2, 2])]
        return torch.from_numpy(r.astype(np.float32))


d = DatasetMixture()
x = d.sample(128)
print(x.shape)


def train(name, prior, flows):
    model = NormalizingFlowModel(prior, flows)
    optimizer = optim.Adam(model.parameters(), lr=1e-4, weight_decay=1e-5) # todo tune WD
    print(name, "number of params: ", sum(p.numel() for p in model.parameters()))

    model.train()
    for k in range(40):
        x = d.sample(128)

        zs, prior_logprob, log_det = model(x)
        logprob = prior_logprob + log_det
        loss = -torch.sum(logprob) # NLL

        model.zero_grad()
        loss.backward()
        optimizer.step()

        if k % 10 == 0:
            print(loss.item())

    model.eval()
    x = d.sample(128)
    zs, prior_logprob, log_det = model(x)
    z = zs[-1]
    z = z.detach().numpy()
    print("z mean", z.mean(0).tolist(), "z std", z.std(0).tolist())
    p = model.prior.sample([128, 2]).squeeze()
    print("prior sample mean", p.mean(0))

    zs = model.sample(128*8)
    z = zs[-1]
    z = z.detach().numpy()
    print("sample mean", z.mean(0).tolist(), "sample std", z.std(0).tolist())

    # round trip: backward(forward(x)) is x again
    zs, _, log_det = model(x)
    xs, back_log_det = model.backward(zs[-1])
    print("round trip error %.6f, log det sum %.4f" % ((xs[-1] - x).abs().max().item(),
                                                      (log_det + back_log_det).abs().max().item()))
    return model


# RealNVP on the Logistic prior
prior = TransformedDistribution(Uniform(torch.zeros(2), torch.ones(2)), SigmoidTransform().inv) # Logistic distribution
flows = [AffineHalfFlow(dim=2, parity=i%2) for i in range(9)]
train("RealNVP", prior, flows)

# MAF
prior = MultivariateNormal(torch.zeros(2), torch.eye(2))
flows = [MAF(dim=2, parity=i%2) for i in range(4)]
train("MAF", prior, flows)

# Neural splines, coupling
nfs_flow = NSF_CL
flows = [nfs_flow(dim=2, K=8, B=3, hidden_dim=16) for _ in range(3)]
convs = [Invertible1x1Conv(dim=2) for _ in flows]
norms = [ActNorm(dim=2) for _ in flows]
flows = list(itertools.chain(*zip(norms, convs, flows)))
train("NSF_CL", prior, flows)
