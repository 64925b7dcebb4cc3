# ruff: noqa  (the style of the programs it is modelled on kept)
# Three image models as people write them, trained for a few steps (`--arch`):
# * convnext: facebookresearch/ConvNeXt `models/convnext.py` -- a `LayerNorm` module that
#   takes `data_format="channels_last"` (`F.layer_norm`) or `"channels_first"` (written out
#   with `mean` / `pow` / `torch.sqrt` and `weight[:, None, None]`), blocks of a depthwise 7x7
#   `Conv2d(groups=dim)`, `permute(0, 2, 3, 1)`, pointwise Linears with GELU, a layer-scale
#   `gamma` and DropPath, a stochastic-depth schedule `torch.linspace(0, rate, sum(depths))`,
#   `trunc_normal_` via `self.apply`, `head.weight.data.mul_(head_init_scale)`, global
#   average pooling as `x.mean([-2, -1])`; AdamW with the repository's cosine schedule values
#   (`np.linspace` warm-up + cosine array) written into `param_group["lr"]`.
# * mixer: an MLP-Mixer after lucidrains/mlp-mixer-pytorch and google-research/vision_transformer's
#   Mixer, without einops: patches cut with `view` / `permute` / `reshape`, token mixing by
#   `transpose(1, 2)` around a Linear MLP (or `nn.Conv1d(kernel_size=1)`, lucidrains'
#   `chan_first`), pre-norm residuals, `mean(dim=1)`; SGD with Nesterov momentum and
#   `CosineAnnealingLR`.
# * vit / simple_vit: lucidrains/vit-pytorch `vit_pytorch/vit.py` and `simple_vit.py` with
#   the einops `rearrange` / `repeat` calls written as `reshape` / `permute` / `repeat`:
#   `to_qkv(x).chunk(3, dim=-1)` then `map(lambda t: ...)`, `nn.Softmax(dim=-1)`,
#   `nn.ModuleList([nn.ModuleList([...])])` layers, a cls token from `torch.randn` or mean
#   pooling, the 2-d sin-cos position embedding (`torch.meshgrid(indexing="ij")`,
#   `temperature ** omega`, `torch.cat` of `sin`/`cos`); Adam and `StepLR`.
# A re-implementation for shardflow's parity tests, not a copy: our own text with those
# projects' torch calls. Data: a few synthetic 3x16x16 images made in the program.
import argparse
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# --- ConvNeXt -------------------------------------------------------------------------------------

def drop_path(x, drop_prob: float = 0., training: bool = False):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
    random_tensor.floor_()  # binarize
    return x.div(keep_prob) * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob=None):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class LayerNorm(nn.Module):
    """LayerNorm over channels for (N, H, W, C) ("channels_last") or (N, C, H, W) ("channels_first")."""

    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        if self.data_format not in ["channels_last", "channels_first"]:
            raise NotImplementedError
        self.normalized_shape = (normalized_shape, )

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        elif self.data_format == "channels_first":
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            x = self.weight[:, None, None] * x + self.bias[:, None, None]
            return x


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, drop_path=0., layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)  # depthwise conv
        self.norm = LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)  # pointwise/1x1 convs, implemented with linear layers
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init_value * torch.ones((dim)),
                                  requires_grad=True) if layer_scale_init_value > 0 else None
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()

    def forward(self, x):
        input = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)  # (N, H, W, C) -> (N, C, H, W)
        return input + self.drop_path(x)


class ConvNeXt(nn.Module):
    def __init__(self, in_chans=3, num_classes=5, depths=(2, 1), dims=(16, 32), drop_path_rate=0.2,
                 layer_scale_init_value=0.1, head_init_scale=0.5):
        super().__init__()
        self.downsample_layers = nn.ModuleList()  # stem and the downsampling between stages
        stem = nn.Sequential(
            nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
            LayerNorm(dims[0], eps=1e-6, data_format="channels_first"))
        self.downsample_layers.append(stem)
        for i in range(len(dims) - 1):
            downsample_layer = nn.Sequential(
                LayerNorm(dims[i], eps=1e-6, data_format="channels_first"),
                nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2))
            self.downsample_layers.append(downsample_layer)

        self.stages = nn.ModuleList()
        dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        cur = 0
        for i in range(len(dims)):
            stage = nn.Sequential(
                *[ConvNeXtBlock(dim=dims[i], drop_path=dp_rates[cur + j],
                                layer_scale_init_value=layer_scale_init_value) for j in range(depths[i])])
            self.stages.append(stage)
            cur += depths[i]

        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)  # final norm layer
        self.head = nn.Linear(dims[-1], num_classes)

        self.apply(self._init_weights)
        self.head.weight.data.mul_(head_init_scale)
        self.head.bias.data.mul_(head_init_scale)

    def _init_weights(self, m):
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, std=.02)
            nn.init.constant_(m.bias, 0)

    def forward_features(self, x):
        for i in range(len(self.stages)):
            x = self.downsample_layers[i](x)
            x = self.stages[i](x)
        return self.norm(x.mean([-2, -1]))  # global average pooling, (N, C, H, W) -> (N, C)

    def forward(self, x):
        return self.head(self.forward_features(x))


def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
    warmup_schedule = np.array([])
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
    iters = np.arange(epochs * niter_per_ep - warmup_iters)
    schedule = np.array([final_value + 0.5 * (base_value - final_value) * (1 + math.cos(math.pi * i / (len(iters))))
                         for i in iters])
    schedule = np.concatenate((warmup_schedule, schedule))
    assert len(schedule) == epochs * niter_per_ep
    return schedule


# --- MLP-Mixer -----------------------------------------------------------------------------------

def to_patches(img, patch_size):
    """b c (h p1) (w p2) -> b (h w) (p1 p2 c), without einops."""
    b, c, H, W = img.shape
    h, w = H // patch_size, W // patch_size
    x = img.view(b, c, h, patch_size, w, patch_size)
    x = x.permute(0, 2, 4, 3, 5, 1)  # b h w p1 p2 c
    return x.reshape(b, h * w, patch_size * patch_size * c)


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x)) + x


def FeedForward(dim, expansion_factor=4, dropout=0., dense=nn.Linear):
    inner_dim = int(dim * expansion_factor)
    return nn.Sequential(
        dense(dim, inner_dim),
        nn.GELU(),
        nn.Dropout(dropout),
        dense(inner_dim, dim),
        nn.Dropout(dropout))


class TokenMixing(nn.Module):
    """The token MLP of google's Mixer: across patches, on the transposed tokens."""

    def __init__(self, num_patches, expansion_factor):
        super().__init__()
        self.mlp = FeedForward(num_patches, expansion_factor)

    def forward(self, x):
        return self.mlp(x.transpose(1, 2)).transpose(1, 2)


class MLPMixer(nn.Module):
    def __init__(self, image_size=16, channels=3, patch_size=4, dim=32, depth=2, num_classes=5,
                 expansion_factor=4, expansion_factor_token=0.5, conv_tokens=False):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.patch_size = patch_size
        self.stem = nn.Linear((patch_size ** 2) * channels, dim)
        blocks = []
        for i in range(depth):
            if conv_tokens:  # lucidrains: a kernel-size-1 Conv1d over the patch axis
                token = FeedForward(num_patches, expansion_factor, dense=lambda i, o: nn.Conv1d(i, o, kernel_size=1))
            else:
                token = TokenMixing(num_patches, expansion_factor)
            blocks.append(nn.Sequential(
                PreNormResidual(dim, token),
                PreNormResidual(dim, FeedForward(dim, expansion_factor_token))))
        self.blocks = nn.Sequential(*blocks)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, img):
        x = self.stem(to_patches(img, self.patch_size))
        x = self.blocks(x)
        x = self.norm(x)
        return self.head(x.mean(dim=1))


# --- lucidrains ViT ------------------------------------------------------------------------------

def pair(t):
    return t if isinstance(t, tuple) else (t, t)


class Patchify(nn.Module):
    """einops' Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)') as a module."""

    def __init__(self, p1, p2):
        super().__init__()
        self.p1, self.p2 = p1, p2

    def forward(self, x):
        b, c, H, W = x.shape
        x = x.reshape(b, c, H // self.p1, self.p1, W // self.p2, self.p2)
        return x.permute(0, 2, 4, 3, 5, 1).reshape(b, (H // self.p1) * (W // self.p2), -1)

    def extra_repr(self):
        return f"p1={self.p1}, p2={self.p2}"


class VitFeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, dropout=0.):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(dim),
            nn.Linear(dim, hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, dim),
            nn.Dropout(dropout))

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=8, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        project_out = not (heads == 1 and dim_head == dim)
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.attend = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(
            nn.Linear(inner_dim, dim),
            nn.Dropout(dropout)
        ) if project_out else nn.Identity()

    def forward(self, x):
        x = self.norm(x)
        b, n, _ = x.shape
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        # b n (h d) -> b h n d
        q, k, v = map(lambda t: t.reshape(b, n, self.heads, -1).transpose(1, 2), qkv)
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        attn = self.attend(dots)
        attn = self.dropout(attn)
        out = torch.matmul(attn, v)
        out = out.transpose(1, 2).reshape(b, n, -1)  # b h n d -> b n (h d)
        return self.to_out(out)


class Transformer(nn.Module):
    def __init__(self, dim, depth, heads, dim_head, mlp_dim, dropout=0.):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                Attention(dim, heads=heads, dim_head=dim_head, dropout=dropout),
                VitFeedForward(dim, mlp_dim, dropout=dropout)
            ]))

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return self.norm(x)


class ViT(nn.Module):
    def __init__(self, *, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, pool='cls', channels=3,
                 dim_head=8, dropout=0., emb_dropout=0.):
        super().__init__()
        image_height, image_width = pair(image_size)
        patch_height, patch_width = pair(patch_size)
        assert image_height % patch_height == 0 and image_width % patch_width == 0, \
            'Image dimensions must be divisible by the patch size.'
        num_patches = (image_height // patch_height) * (image_width // patch_width)
        patch_dim = channels * patch_height * patch_width
        assert pool in {'cls', 'mean'}, 'pool type must be either cls (cls token) or mean (mean pooling)'

        self.to_patch_embedding = nn.Sequential(
            Patchify(patch_height, patch_width),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.dropout = nn.Dropout(emb_dropout)
        self.transformer = Transformer(dim, depth, heads, dim_head, mlp_dim, dropout)
        self.pool = pool
        self.to_latent = nn.Identity()
        self.mlp_head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.to_patch_embedding(img)
        b, n, _ = x.shape
        cls_tokens = self.cls_token.repeat(b, 1, 1)  # '1 1 d -> b 1 d'
        x = torch.cat((cls_tokens, x), dim=1)
        x += self.pos_embedding[:, :(n + 1)]
        x = self.dropout(x)
        x = self.transformer(x)
        x = x.mean(dim=1) if self.pool == 'mean' else x[:, 0]
        x = self.to_latent(x)
        return self.mlp_head(x)


def posemb_sincos_2d(h, w, dim, temperature: int = 10000, dtype=torch.float32):
    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    assert (dim % 4) == 0, "feature dimension must be multiple of 4 for sincos emb"
    omega = torch.arange(dim // 4) / (dim // 4 - 1)
    omega = 1.0 / (temperature ** omega)
    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]
    pe = torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1)
    return pe.type(dtype)


class SimpleViT(nn.Module):
    def __init__(self, *, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels=3, dim_head=8):
        super().__init__()
        image_height, image_width = pair(image_size)
        patch_height, patch_width = pair(patch_size)
        patch_dim = channels * patch_height * patch_width
        self.to_patch_embedding = nn.Sequential(
            Patchify(patch_height, patch_width),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )
        self.pos_embedding = posemb_sincos_2d(h=image_height // patch_height, w=image_width // patch_width, dim=dim)
        self.transformer = Transformer(dim, depth, heads, dim_head, mlp_dim)
        self.pool = "mean"
        self.to_latent = nn.Identity()
        self.linear_head = nn.Linear(dim, num_classes)

    def forward(self, img):
        device = img.device
        x = self.to_patch_embedding(img)
        x += self.pos_embedding.to(device, dtype=x.dtype)
        x = self.transformer(x)
        x = x.mean(dim=1)
        x = self.to_latent(x)
        return self.linear_head(x)


# --- training ------------------------------------------------------------------------------------

def build(arch):
    if arch == "convnext":
        model = ConvNeXt()
        optimizer = torch.optim.AdamW(model.parameters(), lr=4e-3, weight_decay=0.05)
        return model, optimizer, None
    if arch in ("mixer", "mixer_conv"):
        model = MLPMixer(conv_tokens=arch == "mixer_conv")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
        return model, optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
    if arch == "vit":
        model = ViT(image_size=16, patch_size=4, num_classes=5, dim=32, depth=2, heads=4, mlp_dim=64,
                    dropout=0.1, emb_dropout=0.1)
    else:
        model = SimpleViT(image_size=16, patch_size=4, num_classes=5, dim=32, depth=1, heads=4, mlp_dim=64)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="convnext",
                        choices=["convnext", "mixer", "mixer_conv", "vit", "simple_vit"])
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args(argv)
    data = torch.randn(8, 3, 16, 16)
    labels = torch.randint(0, 5, (8,))
    model, optimizer, scheduler = build(args.arch)
    print(model)
    print(f"{args.arch}: {sum(p.numel() for p in model.parameters())} parameters")
    print(list(model.state_dict())[:4])
    lr_schedule = cosine_scheduler(4e-3, 1e-6, 2, args.steps // 2, warmup_epochs=1) if args.arch == "convnext" else None
    criterion = nn.CrossEntropyLoss()
    for step in range(args.steps):
        model.train()
        if lr_schedule is not None:
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr_schedule[step]
        batch = slice(4 * (step % 2), 4 * (step % 2) + 4)
        output = model(data[batch])
        loss = criterion(output, labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        lr = optimizer.param_groups[0]["lr"]
        print(f"step {step}: loss {loss.item():.6f} lr {lr:.6g} out {output[0, :3]}")
    model.eval()
    with torch.no_grad():
        out = model(data)
    print(f"eval: {F.cross_entropy(out, labels).item():.6f} pred {out.argmax(dim=-1)}")
    return model


if __name__ == "__main__":
    model = main()
