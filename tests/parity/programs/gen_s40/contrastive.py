# ruff: noqa: E501, UP008  (the programs' own style, kept)
"""
Contrastive losses, written from the repositories named (each MIT licence):

* CLIP-style training after openai/CLIP's ``CLIP.forward`` and mlfoundations/open_clip's
  ``ClipLoss``: a ``logit_scale`` parameter ``torch.ones([]) * np.log(1 / 0.07)``, features
  ``F.normalize``-d (and divided by ``.norm(dim=1, keepdim=True)``), ``logit_scale.exp() *
  image_features @ text_features.t()``, symmetric cross-entropy against ``torch.arange``
  labels, ``clamp_`` of the scale under ``no_grad`` after each step; a text tower of
  ``nn.Embedding`` + positional ``nn.Parameter`` + a causal ``nn.TransformerEncoder``
  (``torch.empty(n, n).fill_(float("-inf")).triu_(1)``), pooled at
  ``x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection``; an image tower
  of two convolutions; zero-shot accuracy by ``softmax`` and ``topk``;
* Spijkervet/SimCLR's ``NT_Xent`` (``mask_correlated_samples`` with ``torch.ones((N, N),
  dtype=bool)``, ``fill_diagonal_(0)``, ``nn.CosineSimilarity(dim=2)`` of ``unsqueeze``-d
  views, ``torch.diag(sim, k)``, ``sim[self.mask].reshape(N, -1)``, ``CrossEntropyLoss
  (reduction="sum")`` over ``torch.zeros(N).long()`` labels);
* the UvA deep learning course's SimCLR ``info_nce_loss`` (``F.cosine_similarity`` of
  ``feats[:, None, :]`` and ``feats[None, :, :]``, ``torch.eye(..., dtype=torch.bool)``,
  ``masked_fill_(self_mask, -9e15)``, ``roll`` of the mask, ``logsumexp``, ranking accuracy
  by ``argsort(descending=True).argmin``).
Shrunk: 6 pairs of 3 x 8 x 8 images and 5-token captions, width 16, 4 AdamW steps; the
SimCLR losses on a 2-layer projection head, 3 SGD steps each.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class TextEncoder(nn.Module):
    def __init__(self, vocab_size=20, context_length=5, width=16, embed_dim=8):
        super().__init__()
        self.context_length = context_length
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.empty(context_length, width))
        layer = nn.TransformerEncoderLayer(width, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.ln_final = nn.LayerNorm(width)
        self.text_projection = nn.Parameter(torch.empty(width, embed_dim))
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.positional_embedding, std=0.01)
        nn.init.normal_(self.text_projection, std=width ** -0.5)

    def build_attention_mask(self):
        # lazily create causal attention mask, with full attention between the vision tokens
        # pytorch uses additive attention mask; fill with -inf
        mask = torch.empty(self.context_length, self.context_length)
        mask.fill_(float("-inf"))
        mask.triu_(1)  # zero out the lower diagonal
        return mask

    def forward(self, text):
        x = self.token_embedding(text)  # [batch_size, n_ctx, d_model]
        x = x + self.positional_embedding
        x = self.transformer(x, mask=self.build_attention_mask())
        x = self.ln_final(x)
        # take features from the eot embedding (eot_token is the highest number in each sequence)
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return x


class ImageEncoder(nn.Module):
    def __init__(self, embed_dim=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.proj = nn.Linear(16, embed_dim)

    def forward(self, x):
        x = F.gelu(self.conv1(x))
        x = F.gelu(self.conv2(x))
        return self.proj(x.flatten(2).mean(-1))


class CLIP(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = ImageEncoder()
        self.text = TextEncoder()
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def encode_image(self, image):
        return self.visual(image)

    def encode_text(self, text):
        return self.text(text)

    def forward(self, image, text):
        image_features = self.encode_image(image)
        text_features = self.encode_text(text)

        # normalized features
        image_features = image_features / image_features.norm(dim=1, keepdim=True)
        text_features = text_features / text_features.norm(dim=1, keepdim=True)

        # cosine similarity as logits
        logit_scale = self.logit_scale.exp()
        logits_per_image = logit_scale * image_features @ text_features.t()
        logits_per_text = logits_per_image.t()

        # shape = [global_batch_size, global_batch_size]
        return logits_per_image, logits_per_text


class ClipLoss(nn.Module):
    def get_ground_truth(self, device, num_logits) -> torch.Tensor:
        return torch.arange(num_logits, device=device, dtype=torch.long)

    def get_logits(self, image_features, text_features, logit_scale):
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        return logits_per_image, logits_per_text

    def forward(self, image_features, text_features, logit_scale, output_dict=False):
        device = image_features.device
        logits_per_image, logits_per_text = self.get_logits(image_features, text_features, logit_scale)
        labels = self.get_ground_truth(device, logits_per_image.shape[0])
        total_loss = (
            F.cross_entropy(logits_per_image, labels) +
            F.cross_entropy(logits_per_text, labels)
        ) / 2
        return {"contrastive_loss": total_loss} if output_dict else total_loss


torch.manual_seed(0)
model = CLIP()
images = torch.randn(6, 3, 8, 8)
texts = torch.randint(1, 19, (6, 5))
texts[torch.arange(6), torch.randint(0, 5, (6,))] = 19  # an end-of-text token per caption
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.2)
loss_fn = ClipLoss()
for step in range(4):
    optimizer.zero_grad()
    logits_per_image, logits_per_text = model(images, texts)
    ground_truth = torch.arange(len(images), dtype=torch.long)
    loss = (F.cross_entropy(logits_per_image, ground_truth) + F.cross_entropy(logits_per_text, ground_truth)) / 2
    image_features = F.normalize(model.encode_image(images), dim=-1)
    text_features = F.normalize(model.encode_text(texts), dim=-1)
    open_clip_loss = loss_fn(image_features, text_features, model.logit_scale.exp(), output_dict=True)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, np.log(100))
    print(f"clip step {step} loss {loss.item():.6f} open_clip {open_clip_loss['contrastive_loss'].item():.6f} "
          f"logit_scale {model.logit_scale.item():.6f} grad {model.logit_scale.grad.item():.6f}")

model.eval()
with torch.no_grad():
    image_features = model.encode_image(images)
    text_features = model.encode_text(texts)
    image_features /= image_features.norm(dim=-1, keepdim=True)
    text_features /= text_features.norm(dim=-1, keepdim=True)
    similarity = (100.0 * image_features @ text_features.T).softmax(dim=-1)
    values, indices = similarity[0].topk(3)
print("zero-shot", [f"{v:.5f}" for v in values.tolist()], indices.tolist(),
      "accuracy", (similarity.argmax(dim=-1) == torch.arange(6)).float().mean().item())


class NT_Xent(nn.Module):
    def __init__(self, batch_size, temperature, world_size):
        super(NT_Xent, self).__init__()
        self.batch_size = batch_size
        self.temperature = temperature
        self.world_size = world_size

        self.mask = self.mask_correlated_samples(batch_size, world_size)
        self.criterion = nn.CrossEntropyLoss(reduction="sum")
        self.similarity_f = nn.CosineSimilarity(dim=2)

    def mask_correlated_samples(self, batch_size, world_size):
        N = 2 * batch_size * world_size
        mask = torch.ones((N, N), dtype=bool)
        mask = mask.fill_diagonal_(0)
        for i in range(batch_size * world_size):
            mask[i, batch_size * world_size + i] = 0
            mask[batch_size * world_size + i, i] = 0
        return mask

    def forward(self, z_i, z_j):
        """
        We do not sample negative examples explicitly.
        Instead, given a positive pair, similar to (Chen et al., 2017), we treat the other 2(N − 1) augmented examples within a minibatch as negative examples.
        """
        N = 2 * self.batch_size * self.world_size

        z = torch.cat((z_i, z_j), dim=0)

        sim = self.similarity_f(z.unsqueeze(1), z.unsqueeze(0)) / self.temperature

        sim_i_j = torch.diag(sim, self.batch_size * self.world_size)
        sim_j_i = torch.diag(sim, -self.batch_size * self.world_size)

        # We have 2N samples, but with Distributed training every GPU gets N examples too, resulting in: 2xNxN
        positive_samples = torch.cat((sim_i_j, sim_j_i), dim=0).reshape(N, 1)
        negative_samples = sim[self.mask].reshape(N, -1)

        labels = torch.zeros(N).to(positive_samples.device).long()
        logits = torch.cat((positive_samples, negative_samples), dim=1)
        loss = self.criterion(logits, labels)
        loss /= N
        return loss


def info_nce_loss(feats, temperature, mode="train"):
    # Calculate cosine similarity
    cos_sim = F.cosine_similarity(feats[:, None, :], feats[None, :, :], dim=-1)
    # Mask out cosine similarity to itself
    self_mask = torch.eye(cos_sim.shape[0], dtype=torch.bool, device=cos_sim.device)
    cos_sim.masked_fill_(self_mask, -9e15)
    # Find positive example -> batch_size//2 away from the original example
    pos_mask = self_mask.roll(shifts=cos_sim.shape[0] // 2, dims=0)
    # InfoNCE loss
    cos_sim = cos_sim / temperature
    nll = -cos_sim[pos_mask] + torch.logsumexp(cos_sim, dim=-1)
    nll = nll.mean()

    # Get ranking position of positive example
    comb_sim = torch.cat(
        [cos_sim[pos_mask][:, None], cos_sim.masked_fill(pos_mask, -9e15)],  # First position positive example
        dim=-1,
    )
    sim_argsort = comb_sim.argsort(dim=-1, descending=True).argmin(dim=-1)
    return nll, (sim_argsort == 0).float().mean(), (sim_argsort < 5).float().mean(), 1 + sim_argsort.float().mean()


x = torch.randn(8, 12)
for name in ("nt_xent", "info_nce"):
    head = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 6))
    opt = torch.optim.SGD(head.parameters(), lr=0.5, momentum=0.9)
    criterion = NT_Xent(batch_size=8, temperature=0.5, world_size=1)
    for step in range(3):
        view_i = x + 0.1 * torch.randn_like(x)
        view_j = x.flip(1) * 0.5 + 0.1 * torch.randn_like(x)
        z_i, z_j = head(view_i), head(view_j)
        if name == "nt_xent":
            loss = criterion(z_i, z_j)
            extra = f"mask {int(criterion.mask.sum())} {criterion.mask.dtype}"
        else:
            loss, top1, top5, mean_pos = info_nce_loss(torch.cat([z_i, z_j], dim=0), temperature=0.07)
            extra = f"top1 {top1.item():.4f} top5 {top5.item():.4f} mean_pos {mean_pos.item():.4f}"
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"{name} step {step} loss {loss.item():.6f} {extra}")
