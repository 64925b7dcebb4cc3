"""A tiny DDPM trained on synthetic images, then sampled, as a script.

Modelled on dome272/Diffusion-Models-pytorch (``ddpm.py``, ``modules.py``): a linear beta
schedule, ``noise_images`` with ``[:, None, None, None]`` indexing, a small UNet of
``DoubleConv`` (GroupNorm, GELU, residual) / ``Down`` / ``Up`` (bilinear ``nn.Upsample``,
``torch.cat`` skips) / ``SelfAttention`` (``nn.MultiheadAttention(batch_first=True)``), a
sinusoidal time embedding, an EMA copy and the ``torch.no_grad()`` sampling loop. This is a
re-implementation in our own words with tiny sizes, not a copy of that repository's files.
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class EMA:
    def __init__(self, beta):
        self.beta = beta
        self.step = 0

    def update_model_average(self, ma_model, current_model):
        for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
            old, new = ma_params.data, current_params.data
            ma_params.data = self.update_average(old, new)

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new

    def step_ema(self, ema_model, model, step_start_ema=2):
        if self.step < step_start_ema:
            self.reset_parameters(ema_model, model)
            self.step += 1
            return
        self.update_model_average(ema_model, model)
        self.step += 1

    def reset_parameters(self, ema_model, model):
        ema_model.load_state_dict(model.state_dict())


class SelfAttention(nn.Module):
    def __init__(self, channels, size):
        super().__init__()
        self.channels = channels
        self.size = size
        self.mha = nn.MultiheadAttention(channels, 2, batch_first=True)
        self.ln = nn.LayerNorm([channels])
        self.ff_self = nn.Sequential(
            nn.LayerNorm([channels]),
            nn.Linear(channels, channels),
            nn.GELU(),
            nn.Linear(channels, channels),
        )

    def forward(self, x):
        x = x.view(-1, self.channels, self.size * self.size).swapaxes(1, 2)
        x_ln = self.ln(x)
        attention_value, _ = self.mha(x_ln, x_ln, x_ln)
        attention_value = attention_value + x
        attention_value = self.ff_self(attention_value) + attention_value
        return attention_value.swapaxes(2, 1).view(-1, self.channels, self.size, self.size)


class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels, mid_channels=None, residual=False):
        super().__init__()
        self.residual = residual
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.GroupNorm(1, mid_channels),
            nn.GELU(),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.GroupNorm(1, out_channels),
        )

    def forward(self, x):
        if self.residual:
            return F.gelu(x + self.double_conv(x))
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels, emb_dim=16):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, in_channels, residual=True),
            DoubleConv(in_channels, out_channels),
        )
        self.emb_layer = nn.Sequential(nn.SiLU(), nn.Linear(emb_dim, out_channels))

    def forward(self, x, t):
        x = self.maxpool_conv(x)
        emb = self.emb_layer(t)[:, :, None, None].repeat(1, 1, x.shape[-2], x.shape[-1])
        return x + emb


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, emb_dim=16):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = nn.Sequential(
            DoubleConv(in_channels, in_channels, residual=True),
            DoubleConv(in_channels, out_channels, in_channels // 2),
        )
        self.emb_layer = nn.Sequential(nn.SiLU(), nn.Linear(emb_dim, out_channels))

    def forward(self, x, skip_x, t):
        x = self.up(x)
        x = torch.cat([skip_x, x], dim=1)
        x = self.conv(x)
        emb = self.emb_layer(t)[:, :, None, None].repeat(1, 1, x.shape[-2], x.shape[-1])
        return x + emb


class UNet(nn.Module):
    def __init__(self, c_in=3, c_out=3, time_dim=16, device="cpu"):
        super().__init__()
        self.device = device
        self.time_dim = time_dim
        self.inc = DoubleConv(c_in, 8)
        self.down1 = Down(8, 16, time_dim)
        self.sa1 = SelfAttention(16, 4)
        self.down2 = Down(16, 16, time_dim)
        self.sa2 = SelfAttention(16, 2)
        self.bot1 = DoubleConv(16, 16)
        self.up1 = Up(32, 8, time_dim)
        self.sa3 = SelfAttention(8, 4)
        self.up2 = Up(16, 8, time_dim)
        self.sa4 = SelfAttention(8, 8)
        self.outc = nn.Conv2d(8, c_out, kernel_size=1)

    def pos_encoding(self, t, channels):
        inv_freq = 1.0 / (10000 ** (torch.arange(0, channels, 2, device=self.device).float() / channels))
        pos_enc_a = torch.sin(t.repeat(1, channels // 2) * inv_freq)
        pos_enc_b = torch.cos(t.repeat(1, channels // 2) * inv_freq)
        return torch.cat([pos_enc_a, pos_enc_b], dim=-1)

    def forward(self, x, t):
        t = t.unsqueeze(-1).type(torch.float)
        t = self.pos_encoding(t, self.time_dim)
        x1 = self.inc(x)
        x2 = self.sa1(self.down1(x1, t))
        x3 = self.sa2(self.down2(x2, t))
        x3 = self.bot1(x3)
        x = self.sa3(self.up1(x3, x2, t))
        x = self.sa4(self.up2(x, x1, t))
        return self.outc(x)


class Diffusion:
    def __init__(self, noise_steps=10, beta_start=1e-4, beta_end=0.02, img_size=8, device="cpu"):
        self.noise_steps = noise_steps
        self.beta_start = beta_start
        self.beta_end = beta_end
        self.img_size = img_size
        self.device = device
        self.beta = self.prepare_noise_schedule().to(device)
        self.alpha = 1. - self.beta
        self.alpha_hat = torch.cumprod(self.alpha, dim=0)

    def prepare_noise_schedule(self):
        return torch.linspace(self.beta_start, self.beta_end, self.noise_steps)

    def noise_images(self, x, t):
        sqrt_alpha_hat = torch.sqrt(self.alpha_hat[t])[:, None, None, None]
        sqrt_one_minus_alpha_hat = torch.sqrt(1 - self.alpha_hat[t])[:, None, None, None]
        eps = torch.randn_like(x)
        return sqrt_alpha_hat * x + sqrt_one_minus_alpha_hat * eps, eps

    def sample_timesteps(self, n):
        return torch.randint(low=1, high=self.noise_steps, size=(n,))

    def sample(self, model, n):
        model.eval()
        with torch.no_grad():
            x = torch.randn((n, 3, self.img_size, self.img_size)).to(self.device)
            for i in reversed(range(1, self.noise_steps)):
                t = (torch.ones(n) * i).long().to(self.device)
                predicted_noise = model(x, t)
                alpha = self.alpha[t][:, None, None, None]
                alpha_hat = self.alpha_hat[t][:, None, None, None]
                beta = self.beta[t][:, None, None, None]
                if i > 1:
                    noise = torch.randn_like(x)
                else:
                    noise = torch.zeros_like(x)
                x = 1 / torch.sqrt(alpha) * (x - ((1 - alpha) / (torch.sqrt(1 - alpha_hat))) * predicted_noise) \
                    + torch.sqrt(beta) * noise
        model.train()
        x = (x.clamp(-1, 1) + 1) / 2
        x = (x * 255).type(torch.uint8)
        return x


def make_images(n=8, size=8):
    """Blobs of colour on a gradient, scaled to [-1, 1] as the repository's transforms do."""
    g = torch.linspace(-1, 1, size)
    base = g[None, :] * g[:, None]
    imgs = torch.stack([base * (k % 3 - 1) + 0.1 * k / n for k in range(n)])
    return torch.stack([imgs, imgs.flip(-1), imgs.transpose(-1, -2)], dim=1).clamp(-1, 1)


def train():
    torch.manual_seed(0)
    device = "cpu"
    images = make_images()
    dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images), batch_size=4, shuffle=True)
    model = UNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    mse = nn.MSELoss()
    diffusion = Diffusion(img_size=8, device=device)
    ema = EMA(0.995)
    ema_model = copy.deepcopy(model).eval().requires_grad_(False)
    print(f"params: {sum(p.numel() for p in model.parameters())}")
    print(f"alpha_hat[-1]: {diffusion.alpha_hat[-1]}")
    for epoch in range(2):
        for i, (images,) in enumerate(dataloader):
            images = images.to(device)
            t = diffusion.sample_timesteps(images.shape[0]).to(device)
            x_t, noise = diffusion.noise_images(images, t)
            predicted_noise = model(x_t, t)
            loss = mse(noise, predicted_noise)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            ema.step_ema(ema_model, model)
            print(f"epoch {epoch} step {i} t={t.tolist()} MSE={loss.item():.6f}")
    sampled_images = diffusion.sample(model, n=2)
    ema_sampled_images = diffusion.sample(ema_model, n=2)
    print(sampled_images.dtype, sampled_images.shape, sampled_images.float().mean().item())
    print(ema_sampled_images[0, 0, 0].tolist())
    torch.save(model.state_dict(), "ckpt.pt")
    torch.save(ema_model.state_dict(), "ema_ckpt.pt")
    torch.save(optimizer.state_dict(), "optim.pt")
    return model, ema_model, sampled_images


if __name__ == "__main__":
    model, ema_model, sampled = train()
