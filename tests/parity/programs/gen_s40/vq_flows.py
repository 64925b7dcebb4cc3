# ruff: noqa: E501, E712, E731, F841, UP008, UP031  (the programs' own style, kept)
"""
Three programs in one script, each written from the repository named:

* zalandoresearch/pytorch-vq-vae (MIT): ``VectorQuantizerEMA`` (``nn.Embedding`` codebook
  ``.weight.data.normal_()``, an ``_ema_w`` ``nn.Parameter`` of ``torch.Tensor(K, D)``, the
  EMA buffers reassigned in ``forward`` and the codebook replaced by a new
  ``nn.Parameter`` each training step, ``argmin`` + ``scatter_`` one-hot encodings,
  the straight-through ``inputs + (quantized - inputs).detach()``, perplexity); distances
  by ``torch.cdist`` (the notebook's expanded square) as later forks do;
* lucidrains/vector-quantize-pytorch's EMA update style (MIT): ``F.one_hot(...).type(dtype)``,
  buffers updated in place under ``no_grad`` (``mul_(decay).add_(x, alpha=1 - decay)``,
  Laplace smoothing, ``copy_``), distances from ``-(x ** 2).sum + 2 x e^T - (e ** 2).sum``,
  ``max(dim=-1).indices``, ``F.embedding`` lookup;
* senya-ashukha/real-nvp-pytorch (no licence file: written in our own words after its
  notebook): ``RealNVP`` with alternating masks as an ``nn.Parameter(requires_grad=False)``,
  ``MultivariateNormal(torch.zeros(2), torch.eye(2))`` prior, ``f`` / ``g`` / ``log_prob`` /
  ``sample((n, 1))``, Adam over ``p.requires_grad == True`` parameters; plus a Glow-style
  invertible 1x1 convolution (``torch.linalg.qr`` init, ``torch.slogdet`` / ``torch.logdet``,
  ``torch.inverse``) and ActNorm with data-dependent init, trained on ``Normal.log_prob``.
Shrunk: 4 x 2 x 4 x 4 random latents, K 8, moons from NumPy (sklearn's ``make_moons`` is not
used), 4 steps each.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import distributions


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost, decay, epsilon=1e-5):
        super(VectorQuantizerEMA, self).__init__()

        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings

        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.normal_()
        self._commitment_cost = commitment_cost

        self.register_buffer('_ema_cluster_size', torch.zeros(num_embeddings))
        self._ema_w = nn.Parameter(torch.Tensor(num_embeddings, self._embedding_dim))
        self._ema_w.data.normal_()

        self._decay = decay
        self._epsilon = epsilon

    def forward(self, inputs):
        # convert inputs from BCHW -> BHWC
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape

        # Flatten input
        flat_input = inputs.view(-1, self._embedding_dim)

        # Calculate distances
        distances = torch.cdist(flat_input, self._embedding.weight) ** 2

        # Encoding
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)

        # Quantize and unflatten
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)

        # Use EMA to update the embedding vectors
        if self.training:
            self._ema_cluster_size = self._ema_cluster_size * self._decay + \
                                     (1 - self._decay) * torch.sum(encodings, 0)

            # Laplace smoothing of the cluster size
            n = torch.sum(self._ema_cluster_size.data)
            self._ema_cluster_size = (
                (self._ema_cluster_size + self._epsilon)
                / (n + self._num_embeddings * self._epsilon) * n)

            dw = torch.matmul(encodings.t(), flat_input)
            self._ema_w = nn.Parameter(self._ema_w * self._decay + (1 - self._decay) * dw)

            self._embedding.weight = nn.Parameter(self._ema_w / self._ema_cluster_size.unsqueeze(1))

        # Loss
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        loss = self._commitment_cost * e_latent_loss

        # Straight Through Estimator
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))

        # convert quantized from BHWC -> BCHW
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class EuclideanCodebook(nn.Module):
    def __init__(self, dim, codebook_size, decay=0.8, eps=1e-5):
        super().__init__()
        self.decay = decay
        self.eps = eps
        embed = torch.randn(codebook_size, dim)
        self.codebook_size = codebook_size
        self.register_buffer('cluster_size', torch.zeros(codebook_size))
        self.register_buffer('embed', embed)
        self.register_buffer('embed_avg', embed.clone())

    def forward(self, x):
        shape, dtype = x.shape, x.dtype
        flatten = x.reshape(-1, shape[-1])
        embed = self.embed.t()

        dist = -(
            flatten.pow(2).sum(1, keepdim=True)
            - 2 * flatten @ embed
            + embed.pow(2).sum(0, keepdim=True)
        )

        embed_ind = dist.max(dim=-1).indices
        embed_onehot = F.one_hot(embed_ind, self.codebook_size).type(dtype)
        embed_ind = embed_ind.view(*shape[:-1])
        quantize = F.embedding(embed_ind, self.embed)

        if self.training:
            with torch.no_grad():
                self.cluster_size.data.mul_(self.decay).add_(embed_onehot.sum(0), alpha=1 - self.decay)
                embed_sum = flatten.t() @ embed_onehot
                self.embed_avg.data.mul_(self.decay).add_(embed_sum.t(), alpha=1 - self.decay)
                n = self.cluster_size.sum()
                cluster_size = (self.cluster_size + self.eps) / (n + self.codebook_size * self.eps) * n
                embed_normalized = self.embed_avg / cluster_size.unsqueeze(1)
                self.embed.data.copy_(embed_normalized)

        return quantize, embed_ind


torch.manual_seed(0)
encoder = nn.Conv2d(3, 2, 3, padding=1)
decoder = nn.Conv2d(2, 3, 3, padding=1)
vq = VectorQuantizerEMA(8, 2, commitment_cost=0.25, decay=0.9)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()) + list(vq.parameters()), lr=1e-2)
images = torch.rand(4, 3, 4, 4)
for step in range(4):
    optimizer.zero_grad()
    z = encoder(images)
    vq_loss, quantized, perplexity, encodings = vq(z)
    recon = decoder(quantized)
    recon_error = F.mse_loss(recon, images)
    loss = recon_error + vq_loss
    loss.backward()
    optimizer.step()
    print(f"vq-ema step {step} recon {recon_error.item():.6f} vq {vq_loss.item():.6f} perplexity {perplexity.item():.5f}",
          "codes", encodings.argmax(1)[:8].tolist())
print("vq-ema cluster size", [f"{v:.5f}" for v in vq._ema_cluster_size.tolist()],
      "codebook is leaf", vq._embedding.weight.is_leaf, vq._embedding.weight.requires_grad,
      "encoder grad", f"{encoder.weight.grad.abs().sum().item():.6f}")
print("vq params", [n for n, _ in vq.named_parameters()], "buffers", [n for n, _ in vq.named_buffers()])

codebook = EuclideanCodebook(2, 8)
x = torch.randn(2, 6, 2, requires_grad=True)
for step in range(3):
    quantize, ind = codebook(x)
    st = x + (quantize - x).detach()
    commit = F.mse_loss(quantize.detach(), x)
    print(f"codebook step {step} ind {ind.tolist()} commit {commit.item():.6f}")
(st.sum() + commit).backward()
print("codebook cluster_size", [f"{v:.5f}" for v in codebook.cluster_size.tolist()],
      "embed[0]", [f"{v:.5f}" for v in codebook.embed[0].tolist()],
      "x.grad", [f"{v:.5f}" for v in x.grad[0, 0].tolist()])


# RealNVP
class RealNVP(nn.Module):
    def __init__(self, nets, nett, mask, prior):
        super(RealNVP, self).__init__()

        self.prior = prior
        self.mask = nn.Parameter(mask, requires_grad=False)
        self.t = torch.nn.ModuleList([nett() for _ in range(len(masks))])
        self.s = torch.nn.ModuleList([nets() for _ in range(len(masks))])

    def g(self, z):
        x = z
        for i in range(len(self.t)):
            x_ = x * self.mask[i]
            s = self.s[i](x_) * (1 - self.mask[i])
            t = self.t[i](x_) * (1 - self.mask[i])
            x = x_ + (1 - self.mask[i]) * (x * torch.exp(s) + t)
        return x

    def f(self, x):
        log_det_J, z = x.new_zeros(x.shape[0]), x
        for i in reversed(range(len(self.t))):
            z_ = self.mask[i] * z
            s = self.s[i](z_) * (1 - self.mask[i])
            t = self.t[i](z_) * (1 - self.mask[i])
            z = (1 - self.mask[i]) * (z - t) * torch.exp(-s) + z_
            log_det_J -= s.sum(dim=1)
        return z, log_det_J

    def log_prob(self, x):
        z, logp = self.f(x)
        return self.prior.log_prob(z) + logp

    def sample(self, batchSize):
        z = self.prior.sample((batchSize, 1))
        logp = self.prior.log_prob(z)
        x = self.g(z)
        return x


def make_moons(n, noise, rng):
    t = rng.uniform(0, math.pi, n)
    upper = np.stack([np.cos(t[: n // 2]), np.sin(t[: n // 2])], 1)
    lower = np.stack([1 - np.cos(t[n // 2:]), 0.5 - np.sin(t[n // 2:])], 1)
    return np.concatenate([upper, lower]) + noise * rng.standard_normal((n, 2))


nets = lambda: nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(), nn.Linear(16, 16), nn.LeakyReLU(), nn.Linear(16, 2), nn.Tanh())
nett = lambda: nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(), nn.Linear(16, 16), nn.LeakyReLU(), nn.Linear(16, 2))
masks = torch.from_numpy(np.array([[0, 1], [1, 0]] * 3).astype(np.float32))
prior = distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
flow = RealNVP(nets, nett, masks, prior)

optimizer = torch.optim.Adam([p for p in flow.parameters() if p.requires_grad == True], lr=1e-3)
rng = np.random.RandomState(1)
for t in range(4):
    noisy_moons = make_moons(32, 0.05, rng).astype(np.float32)
    loss = -flow.log_prob(torch.from_numpy(noisy_moons)).mean()

    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    optimizer.step()
    print('iter %s:' % t, 'loss = %.6f' % loss)

z = flow.f(torch.from_numpy(noisy_moons))[0].detach().numpy()
x = flow.sample(5).detach().numpy()
print("realnvp z", z.shape, np.round(z[:2], 4).tolist(), "x", x.shape, np.round(x[:2, 0], 4).tolist())
print("realnvp mask", flow.mask.requires_grad, [n for n, p in flow.named_parameters()][:3], len(list(flow.parameters())))


# Glow: ActNorm with data-dependent init and an invertible 1x1 convolution
class ActNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.logs = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))

    def forward(self, x):
        if self.initialized.item() == 0:
            with torch.no_grad():
                flat = x.permute(1, 0, 2, 3).contiguous().view(x.shape[1], -1)
                mean = flat.mean(1).view(1, -1, 1, 1)
                std = flat.std(1).view(1, -1, 1, 1)
                self.loc.data.copy_(-mean)
                self.logs.data.copy_(torch.log(1 / (std + 1e-6)))
                self.initialized.fill_(1)
        h, w = x.shape[2:]
        logdet = h * w * torch.sum(self.logs)
        return (x + self.loc) * torch.exp(self.logs), logdet


class InvConv2d(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        weight = q.unsqueeze(2).unsqueeze(3)
        self.weight = nn.Parameter(weight)

    def forward(self, x):
        _, _, height, width = x.shape
        out = F.conv2d(x, self.weight)
        logdet = height * width * torch.slogdet(self.weight.squeeze().double())[1].float()
        return out, logdet

    def reverse(self, output):
        return F.conv2d(output, self.weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))


actnorm, invconv = ActNorm(3), InvConv2d(3)
glow_opt = torch.optim.Adam(list(actnorm.parameters()) + list(invconv.parameters()), lr=1e-2)
data = torch.randn(4, 3, 4, 4) * 2 + 1
base = distributions.Normal(torch.tensor(0.0), torch.tensor(1.0))
for step in range(4):
    h, ld1 = actnorm(data)
    z, ld2 = invconv(h)
    log_pz = base.log_prob(z).sum(dim=(1, 2, 3))
    loss = -(log_pz + ld1 + ld2).mean() / (3 * 4 * 4 * math.log(2))
    glow_opt.zero_grad()
    loss.backward()
    glow_opt.step()
    print(f"glow step {step} bpd {loss.item():.6f} logdet {ld2.item():.6f} logdet check {torch.logdet(invconv.weight.squeeze()).item():.6f}")
with torch.no_grad():
    h, _ = actnorm(data)
    back = invconv.reverse(invconv(h)[0])
    print("glow reverse error < 1e-5", bool((back - h).abs().max() < 1e-5), "initialized", actnorm.initialized.item())
mvn = distributions.MultivariateNormal(torch.zeros(2), scale_tril=torch.tensor([[1.0, 0.0], [0.5, 2.0]]))
pts = mvn.rsample((3,))
print("mvn", [f"{v:.5f}" for v in mvn.log_prob(pts).tolist()], f"{mvn.entropy().item():.5f}",
      [f"{v:.5f}" for v in mvn.covariance_matrix.flatten().tolist()])
