"""Reference models vs PyTorch re-implementations written here: same weights -> same
logits; parameter counts and analytic FLOPs vs torch's FlopCounterMode."""

import math

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from torch.utils.flop_counter import FlopCounterMode

import shardflow as sf
from shardflow import models

RTOL, ATOL = 1e-4, 1e-5


def copy_weights(ours, theirs):
    sd = ours.state_dict()
    tsd = theirs.state_dict()
    assert set(sd) == set(tsd), (set(sd) ^ set(tsd))
    theirs.load_state_dict({k: torch.from_numpy(np.array(v.numpy(), copy=True)) for k, v in sd.items()})


def fwd_flops(model, *args):
    with FlopCounterMode(display=False) as fc:
        model(*args)
    return fc.get_total_flops()


# ----------------------------------------------------------------------------- torch GPT
class TAttn(tnn.Module):
    def __init__(self, C, nh):
        super().__init__()
        self.c_attn, self.c_proj, self.nh = tnn.Linear(C, 3 * C), tnn.Linear(C, C), nh
        self.resid_dropout = tnn.Dropout(0.0)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.nh, C // self.nh).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.nh)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class TBlock(tnn.Module):
    def __init__(self, C, nh):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = tnn.LayerNorm(C), TAttn(C, nh), tnn.LayerNorm(C)
        self.mlp = tnn.Module()
        self.mlp.c_fc, self.mlp.c_proj = tnn.Linear(C, 4 * C), tnn.Linear(4 * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(TF.gelu(self.mlp.c_fc(self.ln_2(x))))


class TGPT(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = tnn.ModuleDict(dict(
            wte=tnn.Embedding(c.vocab_size, c.n_embd), wpe=tnn.Embedding(c.block_size, c.n_embd),
            h=tnn.ModuleList([TBlock(c.n_embd, c.n_head) for _ in range(c.n_layer)]),
            ln_f=tnn.LayerNorm(c.n_embd)))
        self.lm_head = tnn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight

    def forward(self, idx):
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(idx.shape[1]))
        for b in self.transformer.h:
            x = b(x)
        return self.lm_head(self.transformer.ln_f(x))


def test_gpt_parity_loss_grad_and_flops():
    cfg = models.GPTConfig(block_size=16, vocab_size=37, n_layer=2, n_head=4, n_embd=32)
    sf.manual_seed(0)
    ours = models.GPT(cfg)
    theirs = TGPT(cfg)
    copy_weights(ours, theirs)
    idx = np.random.default_rng(0).integers(0, 37, size=(3, 16))
    tgt = np.random.default_rng(1).integers(0, 37, size=(3, 16))
    logits, loss = ours(sf.tensor(idx), sf.tensor(tgt))
    tlogits = theirs(torch.from_numpy(idx))
    tloss = TF.cross_entropy(tlogits.view(-1, 37), torch.from_numpy(tgt).view(-1))
    np.testing.assert_allclose(logits.numpy(), tlogits.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=RTOL)
    loss.backward()
    tloss.backward()
    assert ours.transformer.wte.weight is ours.lm_head.weight
    # every parameter's gradient (the tied wte / lm_head one gets both the embedding's and the
    # head's); float32 gradients up to 0.24 agree with torch's to 1e-7
    t_params = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(t_params)
    for n, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[n].grad.numpy(), rtol=RTOL, atol=1e-6, err_msg=n)
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    with torch.no_grad():
        assert ours.flops_per_sample(16) * 3 == fwd_flops(theirs, torch.from_numpy(idx))
    assert ours.flops_per_sample(16, training=True) == 3 * ours.flops_per_sample(16)
    out = ours.generate(sf.tensor(idx[:1, :4]), 20, top_k=5).numpy()
    assert out.shape == (1, 24)  # crops context to block_size past 16
    np.testing.assert_array_equal(out[:, :4], idx[:1, :4])
    with torch.no_grad():  # each new token is one of torch's top 5 for its (cropped) context
        for t in range(4, 24):
            last = theirs(torch.from_numpy(out[:, max(0, t - 16):t]))[0, -1]
            assert out[0, t] in set(torch.topk(last, 5).indices.tolist()), (t, out[0, t])
    with pytest.raises(ValueError, match="divisible by n_head"):
        models.GPTConfig(n_embd=30, n_head=4)


# ----------------------------------------------------------------------------- torch BERT
class TBertLayer(tnn.Module):
    def __init__(self, H, nh, I, eps):
        super().__init__()
        self.nh = nh
        self.query, self.key, self.value, self.attn_out = (tnn.Linear(H, H) for _ in range(4))
        self.attn_norm, self.out_norm = tnn.LayerNorm(H, eps=eps), tnn.LayerNorm(H, eps=eps)
        self.intermediate, self.output = tnn.Linear(H, I), tnn.Linear(I, H)

    def forward(self, x, keep):
        B, T, H = x.shape
        q, k, v = (m(x).view(B, T, self.nh, -1).transpose(1, 2) for m in (self.query, self.key, self.value))
        s = q @ k.transpose(-1, -2) / math.sqrt(H // self.nh)
        s = s.masked_fill(~keep[:, None, None, :], float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H)
        x = self.attn_norm(x + self.attn_out(y))
        return self.out_norm(x + self.output(TF.gelu(self.intermediate(x))))


class TBert(tnn.Module):
    def __init__(self, c):
        super().__init__()
        H = c.hidden_size
        self.bert = tnn.Module()
        e = self.bert.embeddings = tnn.Module()
        e.word_embeddings = tnn.Embedding(c.vocab_size, H)
        e.position_embeddings = tnn.Embedding(c.max_position_embeddings, H)
        e.token_type_embeddings = tnn.Embedding(c.type_vocab_size, H)
        e.LayerNorm = tnn.LayerNorm(H, eps=c.layer_norm_eps)
        self.bert.layers = tnn.ModuleList([TBertLayer(H, c.num_attention_heads, c.intermediate_size,
                                                      c.layer_norm_eps) for _ in range(c.num_hidden_layers)])
        self.transform, self.transform_norm = tnn.Linear(H, H), tnn.LayerNorm(H, eps=c.layer_norm_eps)
        self.decoder = tnn.Linear(H, c.vocab_size)
        self.decoder.weight = e.word_embeddings.weight

    def forward(self, ids, types, mask):
        e = self.bert.embeddings
        x = e.word_embeddings(ids) + e.position_embeddings(torch.arange(ids.shape[1])) + e.token_type_embeddings(types)
        x = e.LayerNorm(x)
        for layer in self.bert.layers:
            x = layer(x, mask.bool())
        return self.decoder(self.transform_norm(TF.gelu(self.transform(x))))


def test_bert_parity_with_padding_mask():
    cfg = models.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=12)
    ours = models.BertForMaskedLM(cfg).eval()
    theirs = TBert(cfg).eval()
    copy_weights(ours, theirs)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, size=(2, 12))
    types = rng.integers(0, 2, size=(2, 12))
    mask = np.ones((2, 12), np.int64)
    mask[1, 8:] = 0
    labels = np.full((2, 12), -100)
    labels[0, 3], labels[1, 5] = 7, 9
    logits, loss = ours(sf.tensor(ids), sf.tensor(types), sf.tensor(mask), labels=sf.tensor(labels))
    tl = theirs(torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(mask))
    np.testing.assert_allclose(logits.numpy(), tl.detach().numpy(), rtol=RTOL, atol=ATOL)
    tloss = TF.cross_entropy(tl.view(-1, 50), torch.from_numpy(labels).view(-1), ignore_index=-100)
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=RTOL)
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    with torch.no_grad():
        assert 2 * ours.flops_per_sample(12) == fwd_flops(theirs, torch.from_numpy(ids),
                                                          torch.from_numpy(types), torch.from_numpy(mask))


# ----------------------------------------------------------------------------- torch ResNets
class TBasic(tnn.Module):
    def __init__(self, cin, planes, stride, down):
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(planes)
        self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(planes)
        self.downsample = down

    def forward(self, x):
        out = self.bn2(self.conv2(TF.relu(self.bn1(self.conv1(x)))))
        return TF.relu(out + (x if self.downsample is None else self.downsample(x)))


class TBottle(tnn.Module):
    def __init__(self, cin, planes, stride, down):
        super().__init__()
        self.conv1, self.bn1 = tnn.Conv2d(cin, planes, 1, bias=False), tnn.BatchNorm2d(planes)
        self.conv2, self.bn2 = tnn.Conv2d(planes, planes, 3, stride, 1, bias=False), tnn.BatchNorm2d(planes)
        self.conv3, self.bn3 = tnn.Conv2d(planes, planes * 4, 1, bias=False), tnn.BatchNorm2d(planes * 4)
        self.downsample = down

    def forward(self, x):
        out = TF.relu(self.bn1(self.conv1(x)))
        out = self.bn3(self.conv3(TF.relu(self.bn2(self.conv2(out)))))
        return TF.relu(out + (x if self.downsample is None else self.downsample(x)))


class TPadA(tnn.Module):
    def __init__(self, pad):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        return TF.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))


class TResNet(tnn.Module):
    def __init__(self, kind, layers, num_classes, cifar=False):
        super().__init__()
        block, exp = (TBasic, 1) if kind == "basic" else (TBottle, 4)
        widths = (16, 32, 64) if cifar else (64, 128, 256, 512)
        self.cifar = cifar
        cin = widths[0]
        self.conv1 = tnn.Conv2d(3, cin, 3 if cifar else 7, 1 if cifar else 2, 1 if cifar else 3, bias=False)
        self.bn1 = tnn.BatchNorm2d(cin)
        for i, (planes, n) in enumerate(zip(widths, layers)):
            blocks = []
            for b in range(n):
                stride = 2 if (b == 0 and i > 0) else 1
                down = None
                if b == 0 and (stride != 1 or cin != planes * exp):
                    down = TPadA(planes // 4) if cifar else tnn.Sequential(
                        tnn.Conv2d(cin, planes * exp, 1, stride, bias=False), tnn.BatchNorm2d(planes * exp))
                blocks.append(block(cin, planes, stride, down))
                cin = planes * exp
            setattr(self, f"layer{i + 1}", tnn.Sequential(*blocks))
        self.nstages = len(widths)
        self.fc = tnn.Linear(cin, num_classes)

    def forward(self, x):
        x = TF.relu(self.bn1(self.conv1(x)))
        if not self.cifar:
            x = TF.max_pool2d(x, 3, 2, 1)
        for i in range(self.nstages):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.fc(TF.adaptive_avg_pool2d(x, 1).flatten(1))


@pytest.mark.parametrize("name,ref,size", [
    ("resnet20", lambda: TResNet("basic", [3, 3, 3], 10, cifar=True), 32),
    ("resnet18", lambda: TResNet("basic", [2, 2, 2, 2], 10), 64),
    ("resnet50", lambda: TResNet("bottleneck", [3, 4, 6, 3], 10), 32),
])
def test_resnet_parity(name, ref, size):
    ours = getattr(models, name)(num_classes=10)
    theirs = ref()
    copy_weights(ours, theirs)
    x = np.random.default_rng(0).standard_normal((2, 3, size, size)).astype(np.float32)
    # train mode (batch statistics) too, except where the last stage has 1x1 maps: BN over
    # 2 values per channel is too ill-conditioned for a 1e-4 comparison
    for train in (False, True) if name != "resnet50" else (False,):
        ours.train(train)
        theirs.train(train)
        with torch.no_grad():
            tl = theirs(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(ours(sf.tensor(x)).numpy(), tl, rtol=RTOL, atol=1e-4)
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    with torch.no_grad():
        assert 2 * ours.flops_per_sample(size) == fwd_flops(theirs.eval(), torch.from_numpy(x))
    if name == "resnet20":
        assert ours.num_parameters() == 269_722  # the paper's "0.27M"
    if name == "resnet50":
        assert models.resnet50().num_parameters() == 25_557_032  # torchvision's count


def test_lenet_and_mlp_parity():
    for ours, theirs, shape in [
        (models.LeNet5(), tnn.Sequential(), (3, 1, 28, 28)),
        (models.MLP(models.MLPConfig(in_features=12, hidden=(16, 8), num_classes=5)), None, (3, 3, 4)),
    ]:
        if isinstance(ours, models.LeNet5):
            theirs = tnn.Module()
            theirs.features = tnn.Sequential(tnn.Conv2d(1, 6, 5, padding=2), tnn.ReLU(), tnn.MaxPool2d(2),
                                             tnn.Conv2d(6, 16, 5), tnn.ReLU(), tnn.MaxPool2d(2))
            theirs.classifier = tnn.Sequential(tnn.Flatten(), tnn.Linear(400, 120), tnn.ReLU(),
                                               tnn.Linear(120, 84), tnn.ReLU(), tnn.Linear(84, 10))
            theirs.forward = lambda x, t=theirs: t.classifier(t.features(x))
        else:
            theirs = tnn.Module()
            theirs.net = tnn.Sequential(tnn.Flatten(), tnn.Linear(12, 16), tnn.ReLU(), tnn.Linear(16, 8),
                                        tnn.ReLU(), tnn.Linear(8, 5))
            theirs.forward = lambda x, t=theirs: t.net(x)
        copy_weights(ours, theirs)
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        with torch.no_grad():
            tl = theirs.forward(torch.from_numpy(x))
            np.testing.assert_allclose(ours(sf.tensor(x)).numpy(), tl.numpy(), rtol=RTOL, atol=ATOL)
            with FlopCounterMode(display=False) as fc:
                theirs.forward(torch.from_numpy(x))
        assert 3 * ours.flops_per_sample() == fc.get_total_flops()
        assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
