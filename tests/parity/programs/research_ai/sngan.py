# ruff: noqa: E501, F401, F841, I001, UP008  (the program's own style, kept)
"""
christiancosgrove/pytorch-spectral-normalization-gan (MIT licence, Copyright (c) 2017
Christian Cosgrove): ``spectral_normalization.py`` (``SpectralNorm`` by one power iteration
on ``_u``/``_v``/``_bar`` parameters registered on the wrapped module), ``model.py``
(the DCGAN-style ``Generator`` and the spectrally normalised ``Discriminator``) and
``main.py``'s training loop (hinge loss, ``disc_iters`` discriminator steps per generator
step, Adam with ``betas=(0.0, 0.9)`` over ``filter(lambda p: p.requires_grad, ...)``,
``ExponentialLR``). Changed: the layer widths are divided by 16 (512 -> 32 ...), CIFAR-10 is
8 synthetic 3 x 32 x 32 images in batches of 4, ``disc_iters`` 2, one epoch,
``disc_loss.data[0]`` is ``.item()`` (indexing a 0-d tensor is an error since PyTorch 0.5),
no ``.cuda()``, no argparse or image saving. Added at the end: PyTorch's own
``nn.utils.spectral_norm`` and ``nn.utils.parametrizations.spectral_norm`` on a layer,
their estimate of the largest singular value against ``torch.linalg.matrix_norm(ord=2)``.
"""
import torch
from torch import nn
from torch.nn import Parameter
from torch.autograd import Variable
import torch.optim as optim
import numpy as np


def l2normalize(v, eps=1e-12):
    return v / (v.norm() + eps)


class SpectralNorm(nn.Module):
    def __init__(self, module, name='weight', power_iterations=1):
        super(SpectralNorm, self).__init__()
        self.module = module
        self.name = name
        self.power_iterations = power_iterations
        if not self._made_params():
            self._make_params()

    def _update_u_v(self):
        u = getattr(self.module, self.name + "_u")
        v = getattr(self.module, self.name + "_v")
        w = getattr(self.module, self.name + "_bar")

        height = w.data.shape[0]
        for _ in range(self.power_iterations):
            v.data = l2normalize(torch.mv(torch.t(w.view(height,-1).data), u.data))
            u.data = l2normalize(torch.mv(w.view(height,-1).data, v.data))

        # sigma = torch.dot(u.data, torch.mv(w.view(height,-1).data, v.data))
        sigma = u.dot(w.view(height, -1).mv(v))
        setattr(self.module, self.name, w / sigma.expand_as(w))

    def _made_params(self):
        try:
            u = getattr(self.module, self.name + "_u")
            v = getattr(self.module, self.name + "_v")
            w = getattr(self.module, self.name + "_bar")
            return True
        except AttributeError:
            return False

    def _make_params(self):
        w = getattr(self.module, self.name)

        height = w.data.shape[0]
        width = w.view(height, -1).data.shape[1]

        u = Parameter(w.data.new(height).normal_(0, 1), requires_grad=False)
        v = Parameter(w.data.new(width).normal_(0, 1), requires_grad=False)
        u.data = l2normalize(u.data)
        v.data = l2normalize(v.data)
        w_bar = Parameter(w.data)

        del self.module._parameters[self.name]

        self.module.register_parameter(self.name + "_u", u)
        self.module.register_parameter(self.name + "_v", v)
        self.module.register_parameter(self.name + "_bar", w_bar)

    def forward(self, *args):
        self._update_u_v()
        return self.module.forward(*args)


# model.py (widths / 16)
channels = 3
leak = 0.1
w_g = 4


class Generator(nn.Module):
    def __init__(self, z_dim):
        super(Generator, self).__init__()
        self.z_dim = z_dim

        self.model = nn.Sequential(
            nn.ConvTranspose2d(z_dim, 32, 4, stride=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=(1,1)),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.ConvTranspose2d(16, 8, 4, stride=2, padding=(1,1)),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.ConvTranspose2d(8, 4, 4, stride=2, padding=(1,1)),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.ConvTranspose2d(4, channels, 3, stride=1, padding=(1,1)),
            nn.Tanh())

    def forward(self, z):
        return self.model(z.view(-1, self.z_dim, 1, 1))


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()

        self.conv1 = SpectralNorm(nn.Conv2d(channels, 4, 3, stride=1, padding=(1,1)))

        self.conv2 = SpectralNorm(nn.Conv2d(4, 4, 4, stride=2, padding=(1,1)))
        self.conv3 = SpectralNorm(nn.Conv2d(4, 8, 3, stride=1, padding=(1,1)))
        self.conv4 = SpectralNorm(nn.Conv2d(8, 8, 4, stride=2, padding=(1,1)))
        self.conv5 = SpectralNorm(nn.Conv2d(8, 16, 3, stride=1, padding=(1,1)))
        self.conv6 = SpectralNorm(nn.Conv2d(16, 16, 4, stride=2, padding=(1,1)))
        self.conv7 = SpectralNorm(nn.Conv2d(16, 32, 3, stride=1, padding=(1,1)))


        self.fc = SpectralNorm(nn.Linear(w_g * w_g * 32, 1))

    def forward(self, x):
        m = x
        m = nn.LeakyReLU(leak)(self.conv1(m))
        m = nn.LeakyReLU(leak)(self.conv2(m))
        m = nn.LeakyReLU(leak)(self.conv3(m))
        m = nn.LeakyReLU(leak)(self.conv4(m))
        m = nn.LeakyReLU(leak)(self.conv5(m))
        m = nn.LeakyReLU(leak)(self.conv6(m))
        m = nn.LeakyReLU(leak)(self.conv7(m))

        return self.fc(m.view(-1,w_g * w_g * 32))


# main.py
class args:
    batch_size = 4
    lr = 2e-4
    loss = 'hinge'

g = torch.Generator().manual_seed(3)
images = torch.tanh(torch.randn(8, 3, 32, 32, generator=g))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, torch.zeros(8)), batch_size=args.batch_size, shuffle=True, num_workers=1 - 1)

Z_dim = 16
#number of updates to discriminator for every update to generator
disc_iters = 2

discriminator = Discriminator()
generator = Generator(Z_dim)

# because the spectral normalization module creates parameters that don't require gradients (u and v), we don't want to
# optimize these using sgd. We only let the optimizer operate on parameters that _do_ require gradients
# TODO: replace Parameters with buffers, which aren't returned from .parameters() method.
optim_disc = optim.Adam(filter(lambda p: p.requires_grad, discriminator.parameters()), lr=args.lr, betas=(0.0,0.9))
optim_gen  = optim.Adam(generator.parameters(), lr=args.lr, betas=(0.0,0.9))

# use an exponentially decaying learning rate
scheduler_d = optim.lr_scheduler.ExponentialLR(optim_disc, gamma=0.99)
scheduler_g = optim.lr_scheduler.ExponentialLR(optim_gen, gamma=0.99)

print("discriminator parameters", [name for name, _ in discriminator.conv1.named_parameters()])


def train(epoch):
    for batch_idx, (data, target) in enumerate(loader):
        if data.size()[0] != args.batch_size:
            continue
        data, target = Variable(data), Variable(target)

        # update discriminator
        for _ in range(disc_iters):
            z = Variable(torch.randn(args.batch_size, Z_dim))
            optim_disc.zero_grad()
            optim_gen.zero_grad()
            if args.loss == 'hinge':
                disc_loss = nn.ReLU()(1.0 - discriminator(data)).mean() + nn.ReLU()(1.0 + discriminator(generator(z))).mean()
            elif args.loss == 'wasserstein':
                disc_loss = -discriminator(data).mean() + discriminator(generator(z)).mean()
            else:
                disc_loss = nn.BCEWithLogitsLoss()(discriminator(data), Variable(torch.ones(args.batch_size, 1))) + \
                    nn.BCEWithLogitsLoss()(discriminator(generator(z)), Variable(torch.zeros(args.batch_size, 1)))
            disc_loss.backward()
            optim_disc.step()

        z = Variable(torch.randn(args.batch_size, Z_dim))

        # update generator
        optim_disc.zero_grad()
        optim_gen.zero_grad()
        if args.loss == 'hinge' or args.loss == 'wasserstein':
            gen_loss = -discriminator(generator(z)).mean()
        else:
            gen_loss = nn.BCEWithLogitsLoss()(discriminator(generator(z)), Variable(torch.ones(args.batch_size, 1)))
        gen_loss.backward()
        optim_gen.step()

        if batch_idx % 1 == 0:
            print('disc loss', f"{disc_loss.item():.6f}", 'gen loss', f"{gen_loss.item():.6f}")
    scheduler_d.step()
    scheduler_g.step()


fixed_z = Variable(torch.randn(args.batch_size, Z_dim))


def evaluate(epoch):
    samples = generator(fixed_z).data.cpu().numpy()[:2]
    print("samples", [round(float(v), 5) for v in samples[:, 0, 0, :4].reshape(-1)])


for epoch in range(1):
    train(epoch)
    evaluate(epoch)
print("conv1 weight_u", [round(v, 5) for v in discriminator.conv1.module.weight_u.tolist()])
print("lr", scheduler_d.get_last_lr())

# added: PyTorch's spectral norms on a layer
layer = nn.Linear(6, 5)
reference = torch.linalg.matrix_norm(layer.weight.detach(), ord=2)
old = nn.utils.spectral_norm(nn.Linear(6, 5), n_power_iterations=3)
old.weight_orig.data.copy_(layer.weight.data)
new = nn.utils.parametrizations.spectral_norm(nn.Linear(6, 5), n_power_iterations=3)
new.parametrizations.weight.original.data.copy_(layer.weight.data)
x = torch.randn(2, 6)
for _ in range(4):
    old(x), new(x)
print("old-style sigma", f"{(layer.weight.detach().norm() / old.weight.detach().norm()).item():.5f}",
      "parametrization sigma", f"{(layer.weight.detach().norm() / new.weight.detach().norm()).item():.5f}",
      "matrix_norm", f"{reference.item():.5f}")
new.eval()
print("eval weight", [round(v, 5) for v in new.weight[0].tolist()], sorted(new.state_dict()))
