# ruff: noqa: E731, UP006, UP008, UP035  (the program's own style, kept)
"""
cloneofsimo/minDiffusion (MIT licence), written from its ``superminddpm.py`` and
``mindiffusion/unet.py`` / ``ddpm.py``: ``ddpm_schedules`` (a dict of schedules registered
as buffers in a loop), the ``DummyEpsModel`` of 7x7 conv / BatchNorm / LeakyReLU blocks, the
``NaiveUnet`` (``Conv3`` residual blocks with GroupNorm, ``UnetDown`` with ``MaxPool2d``,
``UnetUp`` with ``ConvTranspose2d(2, 2)``, ``TimeSiren``, ``AvgPool2d(4)`` bottleneck and a
``ConvTranspose2d(4, 4)`` back), ``DDPM.forward`` (``randint`` timesteps, ``sqrtab[_ts,
None, None, None]``, ``_ts / n_T``) and ``sample`` under ``torch.no_grad``; added: a DDIM
sampler over the same schedule (``eta`` 0 and 1). Shrunk: 1 x 8 x 8 (DummyEpsModel) and 1 x 32 x 32 (NaiveUnet) random images
(MNIST / CIFAR10 in the original), n_feat 8, n_T 10, 3 (2 for the NaiveUnet) Adam steps, 3-step DDIM, a loss line
instead of tqdm, no ``save_image``.
"""
from typing import Dict, Tuple

import torch
import torch.nn as nn


def ddpm_schedules(beta1: float, beta2: float, T: int) -> Dict[str, torch.Tensor]:
    """
    Returns pre-computed schedules for DDPM sampling, training process.
    """
    assert beta1 < beta2 < 1.0, "beta1 and beta2 must be in (0, 1)"

    beta_t = (beta2 - beta1) * torch.arange(0, T + 1, dtype=torch.float32) / T + beta1
    sqrt_beta_t = torch.sqrt(beta_t)
    alpha_t = 1 - beta_t
    log_alpha_t = torch.log(alpha_t)
    alphabar_t = torch.cumsum(log_alpha_t, dim=0).exp()

    sqrtab = torch.sqrt(alphabar_t)
    oneover_sqrta = 1 / torch.sqrt(alpha_t)

    sqrtmab = torch.sqrt(1 - alphabar_t)
    mab_over_sqrtmab_inv = (1 - alpha_t) / sqrtmab

    return {
        "alpha_t": alpha_t,  # \alpha_t
        "oneover_sqrta": oneover_sqrta,  # 1/\sqrt{\alpha_t}
        "sqrt_beta_t": sqrt_beta_t,  # \sqrt{\beta_t}
        "alphabar_t": alphabar_t,  # \bar{\alpha_t}
        "sqrtab": sqrtab,  # \sqrt{\bar{\alpha_t}}
        "sqrtmab": sqrtmab,  # \sqrt{1-\bar{\alpha_t}}
        "mab_over_sqrtmab": mab_over_sqrtmab_inv,  # (1-\alpha_t)/\sqrt{1-\bar{\alpha_t}}
    }


blk = lambda ic, oc: nn.Sequential(
    nn.Conv2d(ic, oc, 7, padding=3),
    nn.BatchNorm2d(oc),
    nn.LeakyReLU(),
)


class DummyEpsModel(nn.Module):
    """
    This should be unet-like, but let's don't think about the model too much :P
    Basically, any universal R^n -> R^n model should work.
    """

    def __init__(self, n_channel: int) -> None:
        super(DummyEpsModel, self).__init__()
        self.conv = nn.Sequential(  # with batchnorm
            blk(n_channel, 8),
            blk(8, 16),
            blk(16, 8),
            nn.Conv2d(8, n_channel, 3, padding=1),
        )

    def forward(self, x, t) -> torch.Tensor:
        # Lets think about using t later. In the paper, they used Tr-like positional embeddings.
        return self.conv(x)


# mindiffusion/unet.py
class Conv3(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, is_res: bool = False) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, 1, 1),
            nn.GroupNorm(8, out_channels),
            nn.ReLU(),
        )
        self.conv = nn.Sequential(
            nn.Conv2d(out_channels, out_channels, 3, 1, 1),
            nn.GroupNorm(8, out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, 3, 1, 1),
            nn.GroupNorm(8, out_channels),
            nn.ReLU(),
        )

        self.is_res = is_res

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.main(x)
        if self.is_res:
            x = x + self.conv(x)
            return x / 1.414
        else:
            return self.conv(x)


class UnetDown(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super(UnetDown, self).__init__()
        layers = [Conv3(in_channels, out_channels), nn.MaxPool2d(2)]
        self.model = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


class UnetUp(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super(UnetUp, self).__init__()
        layers = [
            nn.ConvTranspose2d(in_channels, out_channels, 2, 2),
            Conv3(out_channels, out_channels),
            Conv3(out_channels, out_channels),
        ]
        self.model = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        x = torch.cat((x, skip), 1)
        x = self.model(x)

        return x


class TimeSiren(nn.Module):
    def __init__(self, emb_dim: int) -> None:
        super(TimeSiren, self).__init__()

        self.lin1 = nn.Linear(1, emb_dim, bias=False)
        self.lin2 = nn.Linear(emb_dim, emb_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 1)
        x = torch.sin(self.lin1(x))
        x = self.lin2(x)
        return x


class NaiveUnet(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, n_feat: int = 256) -> None:
        super(NaiveUnet, self).__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels

        self.n_feat = n_feat

        self.init_conv = Conv3(in_channels, n_feat, is_res=True)

        self.down1 = UnetDown(n_feat, n_feat)
        self.down2 = UnetDown(n_feat, 2 * n_feat)
        self.down3 = UnetDown(2 * n_feat, 2 * n_feat)

        self.to_vec = nn.Sequential(nn.AvgPool2d(4), nn.ReLU())

        self.timeembed = TimeSiren(2 * n_feat)

        self.up0 = nn.Sequential(
            nn.ConvTranspose2d(2 * n_feat, 2 * n_feat, 4, 4),
            nn.GroupNorm(8, 2 * n_feat),
            nn.ReLU(),
        )

        self.up1 = UnetUp(4 * n_feat, 2 * n_feat)
        self.up2 = UnetUp(4 * n_feat, n_feat)
        self.up3 = UnetUp(2 * n_feat, n_feat)
        self.out = nn.Conv2d(2 * n_feat, self.out_channels, 3, 1, 1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:

        x = self.init_conv(x)

        down1 = self.down1(x)
        down2 = self.down2(down1)
        down3 = self.down3(down2)

        thro = self.to_vec(down3)
        temb = self.timeembed(t).view(-1, self.n_feat * 2, 1, 1)

        thro = self.up0(thro + temb)

        up1 = self.up1(thro, down3) + temb
        up2 = self.up2(up1, down2)
        up3 = self.up3(up2, down1)

        out = self.out(torch.cat((up3, x), 1))

        return out


class DDPM(nn.Module):
    def __init__(
        self,
        eps_model: nn.Module,
        betas: Tuple[float, float],
        n_T: int,
        criterion: nn.Module = nn.MSELoss(),
    ) -> None:
        super(DDPM, self).__init__()
        self.eps_model = eps_model

        # register_buffer allows us to freely access these tensors by name. It helps device placement.
        for k, v in ddpm_schedules(betas[0], betas[1], n_T).items():
            self.register_buffer(k, v)

        self.n_T = n_T
        self.criterion = criterion

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Makes forward diffusion x_t, and tries to guess epsilon value from x_t using eps_model.
        This implements Algorithm 1 in the paper.
        """

        _ts = torch.randint(1, self.n_T, (x.shape[0],)).to(
            x.device
        )  # t ~ Uniform(0, n_T)
        eps = torch.randn_like(x)  # eps ~ N(0, 1)

        x_t = (
            self.sqrtab[_ts, None, None, None] * x
            + self.sqrtmab[_ts, None, None, None] * eps
        )  # This is the x_t, which is sqrt(alphabar) x_0 + sqrt(1-alphabar) * eps
        # We should predict the "error term" from this x_t. Loss is what we return.

        return self.criterion(eps, self.eps_model(x_t, _ts / self.n_T))

    def sample(self, n_sample: int, size, device) -> torch.Tensor:

        x_i = torch.randn(n_sample, *size).to(device)  # x_T ~ N(0, 1)

        # This samples accordingly to Algorithm 2. It is exactly the same logic.
        for i in range(self.n_T, 0, -1):
            z = torch.randn(n_sample, *size).to(device) if i > 1 else 0
            eps = self.eps_model(x_i, torch.tensor(i / self.n_T).to(device).repeat(n_sample, 1))
            x_i = (
                self.oneover_sqrta[i] * (x_i - eps * self.mab_over_sqrtmab[i])
                + self.sqrt_beta_t[i] * z
            )

        return x_i

    # added: DDIM over the same alphabar_t
    @torch.no_grad()
    def sample_ddim(self, n_sample: int, size, steps: int, eta: float = 0.0) -> torch.Tensor:
        x_i = torch.randn(n_sample, *size)
        times = torch.linspace(self.n_T, 0, steps + 1).long().tolist()
        for i, j in zip(times[:-1], times[1:]):
            t = torch.full((n_sample, 1), i / self.n_T)
            eps = self.eps_model(x_i, t)
            ab_i, ab_j = self.alphabar_t[i], self.alphabar_t[j]
            x0 = (x_i - (1 - ab_i).sqrt() * eps) / ab_i.sqrt()
            x0 = x0.clamp(-1.0, 1.0)
            sigma = eta * ((1 - ab_j) / (1 - ab_i) * (1 - ab_i / ab_j)).sqrt()
            dir_xt = (1 - ab_j - sigma ** 2).clamp(min=0).sqrt() * eps
            x_i = ab_j.sqrt() * x0 + dir_xt + sigma * torch.randn_like(x_i)
        return x_i


def train(eps_model, name, side, n_steps=3, n_T=10, n_sample=2) -> None:
    ddpm = DDPM(eps_model=eps_model, betas=(1e-4, 0.02), n_T=n_T)
    print(name, "buffers", [k for k, _ in ddpm.named_buffers()][:4],
          "params", sum(p.numel() for p in ddpm.parameters()))
    optim = torch.optim.Adam(ddpm.parameters(), lr=2e-4)
    x_all = torch.rand(4, 1, side, side) * 2 - 1
    loss_ema = None
    for i in range(n_steps):
        ddpm.train()
        x = x_all[(i % 2) * 2:(i % 2) * 2 + 2]
        optim.zero_grad()
        loss = ddpm(x)
        loss.backward()
        if loss_ema is None:
            loss_ema = loss.item()
        else:
            loss_ema = 0.9 * loss_ema + 0.1 * loss.item()
        print(f"{name} step {i} loss: {loss.item():.6f} ema {loss_ema:.6f}")
        optim.step()

    ddpm.eval()
    with torch.no_grad():
        xh = ddpm.sample(n_sample, (1, side, side), "cpu")
        print(name, "sample", xh.shape, f"{xh.abs().mean().item():.5f} {xh.std().item():.5f}",
              [round(v, 4) for v in xh[0, 0, 0, :4].tolist()])
        grid = torch.cat([xh, xh.clamp(-1, 1) * 0.5 + 0.5], dim=0)
        print(name, "grid", f"{grid.min().item():.5f} {grid.max().item():.5f}")
    for eta in (0.0, 1.0):
        xd = ddpm.sample_ddim(n_sample, (1, side, side), steps=3, eta=eta)
        print(name, f"ddim eta={eta}", f"{xd.abs().mean().item():.5f} {xd.std().item():.5f}")


torch.manual_seed(0)
train(DummyEpsModel(1), "dummy", 8)
train(NaiveUnet(1, 1, n_feat=8), "unet", 32, n_steps=2, n_sample=1)
