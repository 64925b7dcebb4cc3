# ruff: noqa: E501, F401, I001, UP008  (the program's own style, kept)
"""
sagelywizard/pytorch-mdn (MIT licence): ``mdn/mdn.py`` (the ``MDN`` layer,
``gaussian_probability``, ``mdn_loss``, ``sample``) as published, driven as its
``example/example.py`` drives it (an MDN fitting the inverse of a noisy sine, where one x has
several y); the driver is rewritten small: 300 points, 40 full-batch Adam steps, samples
printed instead of plotted, and, added at the end, the same loss and the mixture's moments,
cdf and samples through ``torch.distributions.MixtureSameFamily``.

A module for a mixture density network layer

For more info on MDNs, see _Mixture Desity Networks_ by Bishop, 1994.
"""
import math

import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable
from torch.distributions import Categorical
import torch.distributions as D


ONEOVERSQRT2PI = 1.0 / math.sqrt(2*math.pi)


class MDN(nn.Module):
    """A mixture density network layer

    The input maps to the parameters of a MoG probability distribution, where
    each Gaussian has O dimensions and diagonal covariance.

    Arguments:
        in_features (int): the number of dimensions in the input
        out_features (int): the number of dimensions in the output
        num_gaussians (int): the number of Gaussians per output dimensions

    Input:
        minibatch (BxD): B is the batch size and D is the number of input
            dimensions.

    Output:
        (pi, sigma, mu) (BxG, BxGxO, BxGxO): B is the batch size, G is the
            number of Gaussians, and O is the number of dimensions for each
            Gaussian. Pi is a multinomial distribution of the Gaussians. Sigma
            is the standard deviation of each Gaussian. Mu is the mean of each
            Gaussian.
    """
    def __init__(self, in_features, out_features, num_gaussians):
        super(MDN, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.num_gaussians = num_gaussians
        self.pi = nn.Sequential(
            nn.Linear(in_features, num_gaussians),
            nn.Softmax(dim=1)
        )
        self.sigma = nn.Linear(in_features, out_features*num_gaussians)
        self.mu = nn.Linear(in_features, out_features*num_gaussians)

    def forward(self, minibatch):
        pi = self.pi(minibatch)
        sigma = torch.exp(self.sigma(minibatch))
        sigma = sigma.view(-1, self.num_gaussians, self.out_features)
        mu = self.mu(minibatch)
        mu = mu.view(-1, self.num_gaussians, self.out_features)
        return pi, sigma, mu


def gaussian_probability(sigma, mu, target):
    """Returns the probability of `target` given MoG parameters `sigma` and `mu`.

    Arguments:
        sigma (BxGxO): The standard deviation of the Gaussians. B is the batch
            size, G is the number of Gaussians, and O is the number of
            dimensions per Gaussian.
        mu (BxGxO): The means of the Gaussians. B is the batch size, G is the
            number of Gaussians, and O is the number of dimensions per Gaussian.
        target (BxI): A batch of target. B is the batch size and I is the number of
            input dimensions.

    Returns:
        probabilities (BxG): The probability of each point in the probability
            of the distribution in the corresponding sigma/mu index.
    """
    target = target.unsqueeze(1).expand_as(sigma)
    ret = ONEOVERSQRT2PI * torch.exp(-0.5 * ((target - mu) / sigma)**2) / sigma
    return torch.prod(ret, 2)


def mdn_loss(pi, sigma, mu, target):
    """Calculates the error, given the MoG parameters and the target

    The loss is the negative log likelihood of the data given the MoG
    parameters.
    """
    prob = pi * gaussian_probability(sigma, mu, target)
    nll = -torch.log(torch.sum(prob, dim=1))
    return torch.mean(nll)


def sample(pi, sigma, mu):
    """Draw samples from a MoG.
    """
    categorical = Categorical(pi)
    pis = list(categorical.sample().data)
    sample = Variable(sigma.data.new(sigma.size(0), sigma.size(2)).normal_())
    for i, idx in enumerate(pis):
        sample[i] = sample[i].mul(sigma[i,idx]).add(mu[i,idx])
    return sample


# example/example.py --------------------------------------------------------------------
"""A script that shows how to use the MDN. It's a simple MDN with a single
nonlinearity that's trained to output 1D samples given a 2D input.
"""
input_dims = 1
output_dims = 1
num_gaussians = 5


# initialize the model
model = nn.Sequential(
    nn.Linear(input_dims, 5),
    nn.Tanh(),
    MDN(5, output_dims, num_gaussians)
)
optimizer = optim.Adam(model.parameters())

# train the model
n = 300
y_data = torch.rand(n, 1) * 20 - 10
x_data = torch.sin(0.75 * y_data) * 7.0 + y_data * 0.5 + torch.randn(n, 1)
x_variable = Variable(x_data)
y_variable = Variable(y_data, requires_grad=False)

for epoch in range(40):
    model.zero_grad()
    pi, sigma, mu = model(x_variable)
    loss = mdn_loss(pi, sigma, mu, y_variable)
    loss.backward()
    optimizer.step()
    if epoch % 5 == 0:
        print(f'{epoch}/40: loss={loss.data.item():.6f}', flush=True)

# sample new points from the trained model
minibatch = Variable(torch.linspace(-10, 10, 8).view(-1, 1))
pi, sigma, mu = model(minibatch)
samples = sample(pi, sigma, mu)
print("pi", [round(v, 5) for v in pi[0].tolist()])
print("samples", [round(v, 4) for v in samples.view(-1).tolist()])

# the same negative log likelihood through torch.distributions (added)
with torch.no_grad():
    pi, sigma, mu = model(x_variable)
    mix = D.MixtureSameFamily(D.Categorical(probs=pi), D.Independent(D.Normal(mu, sigma), 1))
    print("MixtureSameFamily nll", f"{-mix.log_prob(y_variable).mean().item():.6f}", "mdn_loss", f"{mdn_loss(pi, sigma, mu, y_variable).item():.6f}")
    print("mixture mean", [round(v, 5) for v in mix.mean[:4].view(-1).tolist()])
    print("mixture variance", [round(v, 5) for v in mix.variance[:4].view(-1).tolist()])
    print("mixture cdf", [round(v, 5) for v in D.MixtureSameFamily(D.Categorical(probs=pi), D.Normal(mu.squeeze(-1), sigma.squeeze(-1))).cdf(y_variable.squeeze(-1))[:4].tolist()])
    print("mixture sample", [round(v, 4) for v in mix.sample((2,))[:, :3].reshape(-1).tolist()])
