# ruff: noqa: E501, F401, I001, UP004, UP008  (the program's own style, kept)
"""
ermongroup/ddim (MIT licence): ``functions/denoising.py`` (``compute_alpha``,
``generalized_steps``, ``ddpm_steps``), ``functions/losses.py``
(``noise_estimation_loss``), ``models/ema.py`` (``EMAHelper``), from ``models/diffusion.py``
``get_timestep_embedding``, ``nonlinearity`` and ``Normalize``, and from
``runners/diffusion.py`` ``get_beta_schedule`` and the training step (antithetic timesteps,
``clip_grad_norm_``, the EMA update) and ``sample_image``'s uniform and quadratic skips.
Changed: the U-Net is replaced by a two-block convolutional noise model built from the
repository's own pieces (timestep embedding, GroupNorm, swish), on 2 x 8 x 8 images of
stripes; 8 training steps, 100 diffusion steps, 10-step DDIM and DDPM sampling;
``.to('cuda')`` in the samplers is ``.to(x.device)``; no config/argparse/logging.
"""
import math

import numpy as np
import torch
import torch.nn as nn


# runners/diffusion.py
def get_beta_schedule(beta_schedule, *, beta_start, beta_end, num_diffusion_timesteps):
    def sigmoid(x):
        return 1 / (np.exp(-x) + 1)

    if beta_schedule == "quad":
        betas = (
            np.linspace(
                beta_start ** 0.5,
                beta_end ** 0.5,
                num_diffusion_timesteps,
                dtype=np.float64,
            )
            ** 2
        )
    elif beta_schedule == "linear":
        betas = np.linspace(
            beta_start, beta_end, num_diffusion_timesteps, dtype=np.float64
        )
    elif beta_schedule == "const":
        betas = beta_end * np.ones(num_diffusion_timesteps, dtype=np.float64)
    elif beta_schedule == "jsd":  # 1/T, 1/(T-1), 1/(T-2), ..., 1
        betas = 1.0 / np.linspace(
            num_diffusion_timesteps, 1, num_diffusion_timesteps, dtype=np.float64
        )
    elif beta_schedule == "sigmoid":
        betas = np.linspace(-6, 6, num_diffusion_timesteps)
        betas = sigmoid(betas) * (beta_end - beta_start) + beta_start
    else:
        raise NotImplementedError(beta_schedule)
    assert betas.shape == (num_diffusion_timesteps,)
    return betas


# functions/denoising.py
def compute_alpha(beta, t):
    beta = torch.cat([torch.zeros(1).to(beta.device), beta], dim=0)
    a = (1 - beta).cumprod(dim=0).index_select(0, t + 1).view(-1, 1, 1, 1)
    return a


def generalized_steps(x, seq, model, b, **kwargs):
    with torch.no_grad():
        n = x.size(0)
        seq_next = [-1] + list(seq[:-1])
        x0_preds = []
        xs = [x]
        for i, j in zip(reversed(seq), reversed(seq_next)):
            t = (torch.ones(n) * i).to(x.device)
            next_t = (torch.ones(n) * j).to(x.device)
            at = compute_alpha(b, t.long())
            at_next = compute_alpha(b, next_t.long())
            xt = xs[-1].to(x.device)
            et = model(xt, t)
            x0_t = (xt - et * (1 - at).sqrt()) / at.sqrt()
            x0_preds.append(x0_t.to('cpu'))
            c1 = (
                kwargs.get("eta", 0) * ((1 - at / at_next) * (1 - at_next) / (1 - at)).sqrt()
            )
            c2 = ((1 - at_next) - c1 ** 2).sqrt()
            xt_next = at_next.sqrt() * x0_t + c1 * torch.randn_like(x) + c2 * et
            xs.append(xt_next.to('cpu'))

    return xs, x0_preds


def ddpm_steps(x, seq, model, b, **kwargs):
    with torch.no_grad():
        n = x.size(0)
        seq_next = [-1] + list(seq[:-1])
        xs = [x]
        x0_preds = []
        betas = b
        for i, j in zip(reversed(seq), reversed(seq_next)):
            t = (torch.ones(n) * i).to(x.device)
            next_t = (torch.ones(n) * j).to(x.device)
            at = compute_alpha(betas, t.long())
            atm1 = compute_alpha(betas, next_t.long())
            beta_t = 1 - at / atm1
            x = xs[-1].to(x.device)

            output = model(x, t.float())
            e = output

            x0_from_e = (1.0 / at).sqrt() * x - (1.0 / at - 1).sqrt() * e
            x0_from_e = torch.clamp(x0_from_e, -1, 1)
            x0_preds.append(x0_from_e.to('cpu'))
            mean_eps = (
                (atm1.sqrt() * beta_t) * x0_from_e + ((1 - beta_t).sqrt() * (1 - atm1)) * x
            ) / (1.0 - at)

            mean = mean_eps
            noise = torch.randn_like(x)
            mask = 1 - (t == 0).float()
            mask = mask.view(-1, 1, 1, 1)
            logvar = beta_t.log()
            sample = mean + mask * torch.exp(0.5 * logvar) * noise
            xs.append(sample.to('cpu'))
    return xs, x0_preds


# functions/losses.py
def noise_estimation_loss(model,
                          x0: torch.Tensor,
                          t: torch.LongTensor,
                          e: torch.Tensor,
                          b: torch.Tensor, keepdim=False):
    a = (1-b).cumprod(dim=0).index_select(0, t).view(-1, 1, 1, 1)
    x = x0 * a.sqrt() + e * (1.0 - a).sqrt()
    output = model(x, t.float())
    if keepdim:
        return (e - output).square().sum(dim=(1, 2, 3))
    else:
        return (e - output).square().sum(dim=(1, 2, 3)).mean(dim=0)


# models/ema.py
class EMAHelper(object):
    def __init__(self, mu=0.999):
        self.mu = mu
        self.shadow = {}

    def register(self, module):
        if isinstance(module, nn.DataParallel):
            module = module.module
        for name, param in module.named_parameters():
            if param.requires_grad:
                self.shadow[name] = param.data.clone()

    def update(self, module):
        if isinstance(module, nn.DataParallel):
            module = module.module
        for name, param in module.named_parameters():
            if param.requires_grad:
                self.shadow[name].data = (
                    1. - self.mu) * param.data + self.mu * self.shadow[name].data

    def ema(self, module):
        if isinstance(module, nn.DataParallel):
            module = module.module
        for name, param in module.named_parameters():
            if param.requires_grad:
                param.data.copy_(self.shadow[name].data)

    def ema_copy(self, module):
        if isinstance(module, nn.DataParallel):
            inner_module = module.module
            module_copy = type(inner_module)(
                inner_module.config).to(inner_module.config.device)
            module_copy.load_state_dict(inner_module.state_dict())
            module_copy = nn.DataParallel(module_copy)
        else:
            module_copy = type(module)(module.config).to(module.config.device)
            module_copy.load_state_dict(module.state_dict())
        # module_copy = copy.deepcopy(module)
        self.ema(module_copy)
        return module_copy

    def state_dict(self):
        return self.shadow

    def load_state_dict(self, state_dict):
        self.shadow = state_dict


# models/diffusion.py
def get_timestep_embedding(timesteps, embedding_dim):
    """
    This matches the implementation in Denoising Diffusion Probabilistic Models:
    From Fairseq.
    Build sinusoidal embeddings.
    This matches the implementation in tensor2tensor, but differs slightly
    from the description in Section 3.5 of "Attention Is All You Need".
    """
    assert len(timesteps.shape) == 1

    half_dim = embedding_dim // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=torch.float32) * -emb)
    emb = emb.to(device=timesteps.device)
    emb = timesteps.float()[:, None] * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if embedding_dim % 2 == 1:  # zero pad
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


def nonlinearity(x):
    # swish
    return x*torch.sigmoid(x)


def Normalize(in_channels):
    return torch.nn.GroupNorm(num_groups=8, num_channels=in_channels, eps=1e-6, affine=True)  # (32 groups in the repository)


class Config:
    device = torch.device("cpu")
    ch = 16
    temb_ch = 32
    in_channels = 2


class TinyNoiseModel(nn.Module):
    """(the stand-in for the repository's U-Net: its ResnetBlock's pattern, twice)"""

    def __init__(self, config):
        super().__init__()
        self.config = config
        ch, temb_ch = config.ch, config.temb_ch
        self.temb = nn.Module()
        self.temb.dense = nn.ModuleList([torch.nn.Linear(ch, temb_ch), torch.nn.Linear(temb_ch, temb_ch)])
        self.conv_in = torch.nn.Conv2d(config.in_channels, ch, kernel_size=3, stride=1, padding=1)
        self.norm1 = Normalize(ch)
        self.temb_proj = torch.nn.Linear(temb_ch, ch)
        self.norm2 = Normalize(ch)
        self.conv2 = torch.nn.Conv2d(ch, ch, kernel_size=3, stride=1, padding=1)
        self.norm_out = Normalize(ch)
        self.conv_out = torch.nn.Conv2d(ch, config.in_channels, kernel_size=3, stride=1, padding=1)

    def forward(self, x, t):
        temb = get_timestep_embedding(t, self.config.ch)
        temb = self.temb.dense[0](temb)
        temb = nonlinearity(temb)
        temb = self.temb.dense[1](temb)
        h = self.conv_in(x)
        h = nonlinearity(self.norm1(h))
        h = h + self.temb_proj(nonlinearity(temb))[:, :, None, None]
        h = self.conv2(nonlinearity(self.norm2(h))) + h
        return self.conv_out(nonlinearity(self.norm_out(h)))


if __name__ == "__main__":
    torch.manual_seed(0)
    np.random.seed(0)
    config = Config()
    betas = get_beta_schedule("linear", beta_start=0.0001, beta_end=0.02, num_diffusion_timesteps=100)
    betas = torch.from_numpy(betas).float()
    num_timesteps = betas.shape[0]
    print("betas", betas[:3].tolist(), betas.dtype)
    print("sigmoid schedule", [round(v, 6) for v in get_beta_schedule("sigmoid", beta_start=1e-4, beta_end=0.02, num_diffusion_timesteps=5).tolist()])

    stripes = torch.sin(torch.arange(8.0) * math.pi / 4)[None, None, :, None].expand(16, 2, 8, 8)
    data = (stripes * torch.rand(16, 1, 1, 1)).contiguous()

    model = TinyNoiseModel(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, weight_decay=0.0, betas=(0.9, 0.999), amsgrad=False, eps=1e-8)
    ema_helper = EMAHelper(mu=0.9)
    ema_helper.register(model)

    step = 0
    for epoch in range(2):
        for i, x in enumerate(data.split(4)):
            n = x.size(0)
            model.train()
            step += 1
            e = torch.randn_like(x)
            b = betas
            # antithetic sampling
            t = torch.randint(
                low=0, high=num_timesteps, size=(n // 2 + 1,)
            )
            t = torch.cat([t, num_timesteps - t - 1], dim=0)[:n]
            loss = noise_estimation_loss(model, x, t, e, b)
            print(f"step: {step}, loss: {loss.item():.6f}, t: {t.tolist()}")
            optimizer.zero_grad()
            loss.backward()
            try:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            except Exception:
                pass
            optimizer.step()
            ema_helper.update(model)

    test_model = ema_helper.ema_copy(model)
    test_model.eval()
    print("ema conv_out bias", [round(v, 6) for v in test_model.conv_out.bias.tolist()])

    x = torch.randn(2, 2, 8, 8)
    skip = num_timesteps // 10
    seq = range(0, num_timesteps, skip)
    xs, x0_preds = generalized_steps(x, seq, test_model, betas, eta=0.0)
    print("ddim eta 0", len(xs), [round(v, 5) for v in xs[-1][0, 0, :, 0].tolist()])
    xs, _ = generalized_steps(x, seq, test_model, betas, eta=1.0)
    print("ddim eta 1", [round(v, 5) for v in xs[-1][0, 0, :, 0].tolist()])
    seq = (np.linspace(0, np.sqrt(num_timesteps * 0.8), 10) ** 2)
    seq = [int(s) for s in list(seq)]
    print("quad seq", seq)
    xs, x0_preds = ddpm_steps(x, seq, test_model, betas)
    print("ddpm quad", [round(v, 5) for v in xs[-1][1, 1, 0].tolist()])
    print("x0 pred clamp", [round(v, 5) for v in x0_preds[0][0, 0, 0].tolist()])
