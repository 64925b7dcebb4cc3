"""Four VAEs trained a few steps on synthetic images, as a script.

Modelled on AntixK/PyTorch-VAE (``models/vanilla_vae.py``, ``beta_vae.py``, ``cvae.py``,
``vq_vae.py`` and ``experiment.py``'s training step): ``encode``/``decode``/
``reparameterize`` with ``torch.randn_like``, ``loss_function`` returning a dict with
``.detach()`` entries (KLD weighted by ``M_N``), BetaVAE's capacity schedule
(``torch.clamp`` of a tensor capacity), ConditionalVAE's one-hot labels embedded as an extra
image channel, VQ-VAE's codebook (``torch.argmin`` over distances, ``scatter_`` one-hot
encodings, commitment loss, the straight-through estimator), ``sample`` and ``generate``.
This is a re-implementation in our own words with tiny sizes, not a copy of that
repository's files.
"""

import torch
from torch import nn
from torch.nn import functional as F


class BaseVAE(nn.Module):
    def __init__(self):
        super().__init__()

    def generate(self, x, **kwargs):
        return self.forward(x, **kwargs)[0]


def conv_encoder(in_channels, hidden_dims):
    modules = []
    for h_dim in hidden_dims:
        modules.append(nn.Sequential(
            nn.Conv2d(in_channels, out_channels=h_dim, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm2d(h_dim),
            nn.LeakyReLU()))
        in_channels = h_dim
    return nn.Sequential(*modules)


def conv_decoder(hidden_dims, out_channels=3):
    hidden_dims = list(reversed(hidden_dims))
    modules = []
    for i in range(len(hidden_dims) - 1):
        modules.append(nn.Sequential(
            nn.ConvTranspose2d(hidden_dims[i], hidden_dims[i + 1], kernel_size=3, stride=2, padding=1,
                               output_padding=1),
            nn.BatchNorm2d(hidden_dims[i + 1]),
            nn.LeakyReLU()))
    final = nn.Sequential(
        nn.ConvTranspose2d(hidden_dims[-1], hidden_dims[-1], kernel_size=3, stride=2, padding=1, output_padding=1),
        nn.BatchNorm2d(hidden_dims[-1]),
        nn.LeakyReLU(),
        nn.Conv2d(hidden_dims[-1], out_channels=out_channels, kernel_size=3, padding=1),
        nn.Tanh())
    return nn.Sequential(*modules), final


class VanillaVAE(BaseVAE):
    def __init__(self, in_channels, latent_dim, hidden_dims=None, **kwargs):
        super().__init__()
        self.latent_dim = latent_dim
        if hidden_dims is None:
            hidden_dims = [4, 8]
        self.hidden_dims = hidden_dims
        self.encoder = conv_encoder(in_channels, hidden_dims)
        self.fc_mu = nn.Linear(hidden_dims[-1] * 4, latent_dim)
        self.fc_var = nn.Linear(hidden_dims[-1] * 4, latent_dim)
        self.decoder_input = nn.Linear(latent_dim, hidden_dims[-1] * 4)
        self.decoder, self.final_layer = conv_decoder(hidden_dims)

    def encode(self, input):
        result = self.encoder(input)
        result = torch.flatten(result, start_dim=1)
        mu = self.fc_mu(result)
        log_var = self.fc_var(result)
        return [mu, log_var]

    def decode(self, z):
        result = self.decoder_input(z)
        result = result.view(-1, self.hidden_dims[-1], 2, 2)
        result = self.decoder(result)
        result = self.final_layer(result)
        return result

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return eps * std + mu

    def forward(self, input, **kwargs):
        mu, log_var = self.encode(input)
        z = self.reparameterize(mu, log_var)
        return [self.decode(z), input, mu, log_var]

    def loss_function(self, *args, **kwargs):
        recons, input, mu, log_var = args[0], args[1], args[2], args[3]
        kld_weight = kwargs['M_N']
        recons_loss = F.mse_loss(recons, input)
        kld_loss = torch.mean(-0.5 * torch.sum(1 + log_var - mu ** 2 - log_var.exp(), dim=1), dim=0)
        loss = recons_loss + kld_weight * kld_loss
        return {'loss': loss, 'Reconstruction_Loss': recons_loss.detach(), 'KLD': -kld_loss.detach()}

    def sample(self, num_samples, current_device, **kwargs):
        z = torch.randn(num_samples, self.latent_dim)
        z = z.to(current_device)
        return self.decode(z)


class BetaVAE(VanillaVAE):
    num_iter = 0

    def __init__(self, in_channels, latent_dim, hidden_dims=None, beta=4, gamma=1000., max_capacity=25,
                 Capacity_max_iter=1e5, loss_type='B', **kwargs):
        super().__init__(in_channels, latent_dim, hidden_dims)
        self.beta = beta
        self.gamma = gamma
        self.loss_type = loss_type
        self.C_max = torch.Tensor([max_capacity])
        self.C_stop_iter = Capacity_max_iter

    def loss_function(self, *args, **kwargs):
        self.num_iter += 1
        recons, input, mu, log_var = args[0], args[1], args[2], args[3]
        kld_weight = kwargs['M_N']
        recons_loss = F.mse_loss(recons, input)
        kld_loss = torch.mean(-0.5 * torch.sum(1 + log_var - mu ** 2 - log_var.exp(), dim=1), dim=0)
        if self.loss_type == 'H':
            loss = recons_loss + self.beta * kld_weight * kld_loss
        elif self.loss_type == 'B':
            self.C_max = self.C_max.to(input.device)
            C = torch.clamp(self.C_max / self.C_stop_iter * self.num_iter, 0, self.C_max.data[0])
            loss = recons_loss + self.gamma * kld_weight * (kld_loss - C).abs()
        else:
            raise ValueError('Undefined loss type.')
        return {'loss': loss, 'Reconstruction_Loss': recons_loss, 'KLD': kld_loss}


class ConditionalVAE(VanillaVAE):
    def __init__(self, in_channels, num_classes, latent_dim, hidden_dims=None, img_size=8, **kwargs):
        self.img_size = img_size
        super().__init__(in_channels + 1, latent_dim, hidden_dims)
        self.embed_class = nn.Linear(num_classes, img_size * img_size)
        self.embed_data = nn.Conv2d(in_channels, in_channels, kernel_size=1)
        self.decoder_input = nn.Linear(latent_dim + num_classes, self.hidden_dims[-1] * 4)

    def forward(self, input, **kwargs):
        y = kwargs['labels'].float()
        embedded_class = self.embed_class(y)
        embedded_class = embedded_class.view(-1, self.img_size, self.img_size).unsqueeze(1)
        embedded_input = self.embed_data(input)
        x = torch.cat([embedded_input, embedded_class], dim=1)
        mu, log_var = self.encode(x)
        z = self.reparameterize(mu, log_var)
        z = torch.cat([z, y], dim=1)
        return [self.decode(z), input, mu, log_var]

    def sample(self, num_samples, current_device, **kwargs):
        y = kwargs['labels'].float()
        z = torch.randn(num_samples, self.latent_dim)
        z = z.to(current_device)
        z = torch.cat([z, y], dim=1)
        return self.decode(z)


class VectorQuantizer(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, beta=0.25):
        super().__init__()
        self.K = num_embeddings
        self.D = embedding_dim
        self.beta = beta
        self.embedding = nn.Embedding(self.K, self.D)
        self.embedding.weight.data.uniform_(-1 / self.K, 1 / self.K)

    def forward(self, latents):
        latents = latents.permute(0, 2, 3, 1).contiguous()
        latents_shape = latents.shape
        flat_latents = latents.view(-1, self.D)
        dist = torch.sum(flat_latents ** 2, dim=1, keepdim=True) + \
            torch.sum(self.embedding.weight ** 2, dim=1) - \
            2 * torch.matmul(flat_latents, self.embedding.weight.t())
        encoding_inds = torch.argmin(dist, dim=1).unsqueeze(1)
        device = latents.device
        encoding_one_hot = torch.zeros(encoding_inds.size(0), self.K, device=device)
        encoding_one_hot.scatter_(1, encoding_inds, 1)
        quantized_latents = torch.matmul(encoding_one_hot, self.embedding.weight)
        quantized_latents = quantized_latents.view(latents_shape)
        commitment_loss = F.mse_loss(quantized_latents.detach(), latents)
        embedding_loss = F.mse_loss(quantized_latents, latents.detach())
        vq_loss = commitment_loss * self.beta + embedding_loss
        quantized_latents = latents + (quantized_latents - latents).detach()
        return quantized_latents.permute(0, 3, 1, 2).contiguous(), vq_loss


class ResidualLayer(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.resblock = nn.Sequential(nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
                                      nn.ReLU(True),
                                      nn.Conv2d(out_channels, out_channels, kernel_size=1, bias=False))

    def forward(self, input):
        return input + self.resblock(input)


class VQVAE(BaseVAE):
    def __init__(self, in_channels, embedding_dim, num_embeddings, hidden_dims=None, beta=0.25, img_size=8, **kwargs):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.num_embeddings = num_embeddings
        self.img_size = img_size
        self.beta = beta
        if hidden_dims is None:
            hidden_dims = [4, 8]
        modules = []
        for h_dim in hidden_dims:
            modules.append(nn.Sequential(
                nn.Conv2d(in_channels, out_channels=h_dim, kernel_size=4, stride=2, padding=1),
                nn.LeakyReLU()))
            in_channels = h_dim
        modules.append(nn.Sequential(nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1),
                                     nn.LeakyReLU()))
        modules.append(ResidualLayer(in_channels, in_channels))
        modules.append(nn.LeakyReLU())
        modules.append(nn.Sequential(nn.Conv2d(in_channels, embedding_dim, kernel_size=1, stride=1), nn.LeakyReLU()))
        self.encoder = nn.Sequential(*modules)
        self.vq_layer = VectorQuantizer(num_embeddings, embedding_dim, self.beta)
        modules = [nn.Sequential(nn.Conv2d(embedding_dim, hidden_dims[-1], kernel_size=3, stride=1, padding=1),
                                 nn.LeakyReLU()),
                   ResidualLayer(hidden_dims[-1], hidden_dims[-1]),
                   nn.LeakyReLU()]
        hidden_dims.reverse()
        for i in range(len(hidden_dims) - 1):
            modules.append(nn.Sequential(
                nn.ConvTranspose2d(hidden_dims[i], hidden_dims[i + 1], kernel_size=4, stride=2, padding=1),
                nn.LeakyReLU()))
        modules.append(nn.Sequential(
            nn.ConvTranspose2d(hidden_dims[-1], out_channels=3, kernel_size=4, stride=2, padding=1),
            nn.Tanh()))
        self.decoder = nn.Sequential(*modules)

    def encode(self, input):
        return [self.encoder(input)]

    def decode(self, z):
        return self.decoder(z)

    def forward(self, input, **kwargs):
        encoding = self.encode(input)[0]
        quantized_inputs, vq_loss = self.vq_layer(encoding)
        return [self.decode(quantized_inputs), input, vq_loss]

    def loss_function(self, *args, **kwargs):
        recons, input, vq_loss = args[0], args[1], args[2]
        recons_loss = F.mse_loss(recons, input)
        loss = recons_loss + vq_loss
        return {'loss': loss, 'Reconstruction_Loss': recons_loss, 'VQ_Loss': vq_loss}

    def sample(self, num_samples, current_device, **kwargs):
        raise Warning('VQVAE sampler is not implemented.')


def make_data(n=8, size=8):
    g = torch.linspace(-1, 1, size)
    imgs = torch.stack([torch.tanh(g[None, :] * (k + 1) - g[:, None] * (n - k)) for k in range(n)])
    return torch.stack([imgs, -imgs, imgs.t() if imgs.dim() == 2 else imgs.transpose(1, 2)], dim=1), \
        torch.arange(n) % 2


def train_step(model, batch, labels, optimizer, m_n, epoch, step):
    model.train()
    results = model(batch, labels=labels)
    train_loss = model.loss_function(*results, M_N=m_n, optimizer_idx=0, batch_idx=step)
    optimizer.zero_grad()
    train_loss['loss'].backward()
    optimizer.step()
    logs = {key: round(val.item(), 6) for key, val in train_loss.items()}
    print(f"{type(model).__name__} epoch {epoch} step {step}", logs)
    return train_loss


def main():
    torch.manual_seed(1265)
    imgs, classes = make_data()
    dataset = torch.utils.data.TensorDataset(imgs, classes)
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=True, drop_last=True)
    models = {
        'VanillaVAE': VanillaVAE(3, 4),
        'BetaVAE': BetaVAE(3, 4, loss_type='B', gamma=10., max_capacity=25, Capacity_max_iter=10),
        'ConditionalVAE': ConditionalVAE(3, 2, 4),
        'VQVAE': VQVAE(3, 4, 6),
    }
    for name, model in models.items():
        optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=0.0)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
        m_n = loader.batch_size / len(dataset)
        for epoch in range(2):
            for step, (batch, labels) in enumerate(loader):
                labels = F.one_hot(labels, 2) if name == 'ConditionalVAE' else labels
                train_step(model, batch, labels, optimizer, m_n, epoch, step)
            scheduler.step()
        model.eval()
        with torch.no_grad():
            batch, labels = next(iter(loader))
            onehot = F.one_hot(labels, 2)
            recons = model.generate(batch, labels=onehot)
            print(name, 'recons', recons.shape, f"{recons.mean().item():.6f}", f"{recons.std().item():.6f}")
            if name == 'VQVAE':
                try:
                    model.sample(4, 'cpu')
                except Warning as e:
                    print('sample:', e)
            else:
                samples = model.sample(4, 'cpu', labels=onehot)
                print(name, 'samples', samples[0, 0, 0])
        print(name, list(model.state_dict())[:3], len(model.state_dict()))
        torch.save(model.state_dict(), f"{name}.ckpt")
    return models


if __name__ == "__main__":
    models = main()
