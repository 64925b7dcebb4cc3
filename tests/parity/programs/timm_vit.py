# ruff: noqa  (the style of the programs it is modelled on kept)
# A small Vision Transformer built from the blocks people paste out of
# huggingface/pytorch-image-models (timm) `timm/layers/drop.py` (`drop_path` with
# `x.new_empty(shape).bernoulli_(keep_prob)` and `div_`, `DropPath` with its `extra_repr`),
# `timm/layers/layer_scale.py` (`LayerScale`: `init_values * torch.ones(dim)`, `x.mul_` when
# `inplace`), `timm/layers/patch_embed.py` (`PatchEmbed`: a Conv2d with stride = patch size,
# `flatten(2).transpose(1, 2)`) and `timm/models/vision_transformer.py` (a cls token and
# `pos_embed` as Parameters, a fused qkv Linear split with `reshape`/`permute`/`unbind(0)`,
# `trunc_normal_` initialisation through `self.apply(_init_weights)`, `no_weight_decay()`),
# trained the way timm's `train.py` habits go: weight-decay groups that leave out every
# parameter with `ndim <= 1` or a name ending in `.bias` or in `no_weight_decay()`, AdamW, and
# a warm-up + cosine schedule written as a `LambdaLR` lambda (as DeiT/MAE forks do), then
# facebookresearch/mae `main_finetune.py` + `util/pos_embed.py` habits: `torch.save` of a checkpoint
# dict, the head keys deleted on a shape mismatch, `interpolate_pos_embed` (bicubic), and
# `load_state_dict(strict=False)` printed.
# A re-implementation for shardflow's parity tests, not a copy: our own text with those
# projects' torch calls. Data: a few synthetic 3x16x16 images made in the program.
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
    """Stochastic depth per sample: whole residual branches dropped."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # one draw per sample, any rank
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super(DropPath, self).__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


class LayerScale(nn.Module):
    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x.mul_(self.gamma) if self.inplace else x * self.gamma


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32, norm_layer=None, flatten=True):
        super().__init__()
        self.img_size = (img_size, img_size)
        self.patch_size = (patch_size, patch_size)
        self.grid_size = (img_size // patch_size, img_size // patch_size)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.flatten = flatten
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = norm_layer(embed_dim) if norm_layer else nn.Identity()

    def forward(self, x):
        B, C, H, W = x.shape
        assert H == self.img_size[0] and W == self.img_size[1], f"Input size ({H}*{W}) doesn't match model."
        x = self.proj(x)
        if self.flatten:
            x = x.flatten(2).transpose(1, 2)  # BCHW -> BNC
        return self.norm(x)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class Attention(nn.Module):
    def __init__(self, dim, num_heads=4, qkv_bias=True, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        assert dim % num_heads == 0, "dim should be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=2.0, qkv_bias=True, init_values=None, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm, inplace_ls=False):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
        self.ls1 = LayerScale(dim, init_values=init_values, inplace=inplace_ls) if init_values else nn.Identity()
        self.drop_path1 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer)
        self.ls2 = LayerScale(dim, init_values=init_values, inplace=inplace_ls) if init_values else nn.Identity()
        self.drop_path2 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class VisionTransformer(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, num_classes=5, embed_dim=32, depth=2,
                 num_heads=4, mlp_ratio=2.0, init_values=None, drop_path_rate=0.0, inplace_ls=False):
        super().__init__()
        norm_layer = nn.LayerNorm
        self.num_classes = num_classes
        self.num_features = self.embed_dim = embed_dim
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]  # stochastic depth decay rule
        self.blocks = nn.Sequential(*[
            Block(embed_dim, num_heads, mlp_ratio, init_values=init_values, drop_path=dpr[i], inplace_ls=inplace_ls)
            for i in range(depth)])
        self.norm = norm_layer(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()

        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    @torch.jit.ignore
    def no_weight_decay(self):
        return {"pos_embed", "cls_token"}

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed
        x = self.blocks(x)
        return self.norm(x)

    def forward_head(self, x, pre_logits: bool = False):
        x = x[:, 0]
        return x if pre_logits else self.head(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
    no_weight_decay_list = set(no_weight_decay_list)
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": weight_decay}]


def cosine_with_warmup(warmup, total, min_ratio=0.1):
    def fn(step):
        if step < warmup:
            return float(step + 1) / float(warmup)
        progress = float(step - warmup) / float(max(1, total - warmup))
        return min_ratio + (1 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return fn


def interpolate_pos_embed(model, checkpoint_model):
    """Resize a checkpoint's position embedding to the model's patch grid (bicubic), as the
    MAE / DeiT fine-tuning scripts do."""
    pos_embed_checkpoint = checkpoint_model["pos_embed"]
    embedding_size = pos_embed_checkpoint.shape[-1]
    num_patches = model.patch_embed.num_patches
    num_extra_tokens = model.pos_embed.shape[-2] - num_patches
    orig_size = int((pos_embed_checkpoint.shape[-2] - num_extra_tokens) ** 0.5)
    new_size = int(num_patches ** 0.5)
    if orig_size != new_size:
        print("Position interpolate from %dx%d to %dx%d" % (orig_size, orig_size, new_size, new_size))
        extra_tokens = pos_embed_checkpoint[:, :num_extra_tokens]
        pos_tokens = pos_embed_checkpoint[:, num_extra_tokens:]
        pos_tokens = pos_tokens.reshape(-1, orig_size, orig_size, embedding_size).permute(0, 3, 1, 2)
        pos_tokens = F.interpolate(pos_tokens, size=(new_size, new_size), mode="bicubic", align_corners=False)
        pos_tokens = pos_tokens.permute(0, 2, 3, 1).flatten(1, 2)
        checkpoint_model["pos_embed"] = torch.cat((extra_tokens, pos_tokens), dim=1)


def finetune(path):
    """Load the saved checkpoint into a ViT for 24x24 images and 3 classes (head dropped,
    position embedding resized), re-initialise the head, and train one step."""
    checkpoint = torch.load(path, map_location="cpu")
    print("checkpoint:", sorted(checkpoint), checkpoint["step"])
    checkpoint_model = checkpoint["model"]
    model = VisionTransformer(img_size=24, num_classes=3, drop_path_rate=0.1, init_values=1e-1)
    state_dict = model.state_dict()
    for k in ["head.weight", "head.bias"]:
        if k in checkpoint_model and checkpoint_model[k].shape != state_dict[k].shape:
            print(f"Removing key {k} from pretrained checkpoint")
            del checkpoint_model[k]
    interpolate_pos_embed(model, checkpoint_model)
    msg = model.load_state_dict(checkpoint_model, strict=False)
    print(msg)
    assert set(msg.missing_keys) == {"head.weight", "head.bias"}
    nn.init.trunc_normal_(model.head.weight, std=2e-5)
    optimizer = torch.optim.AdamW(param_groups_weight_decay(model, 0.05, model.no_weight_decay()), lr=5e-4)
    images, labels = torch.randn(4, 3, 24, 24), torch.tensor([0, 1, 2, 1])
    loss = F.cross_entropy(model(images), labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    print(f"finetune loss {loss.item():.6f} pos_embed {tuple(model.pos_embed.shape)} {model.pos_embed[0, 1, :3]}")
    return model


def main(argv=()):
    steps = 4
    images = torch.randn(6, 3, 16, 16)
    labels = torch.randint(0, 5, (6,))
    model = VisionTransformer(init_values=1e-1, drop_path_rate=0.2, inplace_ls="--inplace-ls" in argv)
    print(model)
    print("params:", sum(p.numel() for p in model.parameters() if p.requires_grad))
    print("keys:", list(model.state_dict().keys())[:6])
    groups = param_groups_weight_decay(model, 0.05, model.no_weight_decay())
    print("groups:", [len(g["params"]) for g in groups], [g["weight_decay"] for g in groups])
    optimizer = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.999))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_with_warmup(2, steps))
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for step in range(steps):
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        print(f"step {step} loss {loss.item():.6f} grad_norm {grad_norm:.6f} lr {scheduler.get_last_lr()[0]:.6e}")
    model.eval()
    with torch.no_grad():
        logits = model(images)
        acc = (logits.argmax(-1) == labels).float().mean()
    print(f"eval acc {acc} logits {logits[0]}")
    print(model.blocks[0].ls1.gamma[:4], model.cls_token.dtype, model.pos_embed.device)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "step": steps}, "vit_checkpoint.pth")
    resumed = torch.optim.AdamW(param_groups_weight_decay(model, 0.05, model.no_weight_decay()), lr=1e-3)
    resumed.load_state_dict(torch.load("vit_checkpoint.pth")["optimizer"])
    print("resumed optimizer:", resumed.state_dict()["state"][0]["step"], resumed.param_groups[1]["lr"])
    return model, losses


if __name__ == "__main__":
    model, losses = main(sys.argv[1:])
    finetuned = finetune("vit_checkpoint.pth")
