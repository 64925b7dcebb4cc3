"""Train a small character-level GPT on the Python standard library's own source code.

Read top to bottom like nanoGPT's train.py; `shardflow train gpt` is the same job with
flags, checkpoints, resumption and plots. Runs on 2 CPU cores in a few minutes:

    python examples/train_gpt.py
    shardflow run -n 2 python examples/train_gpt.py     # data parallel over 2 ranks

The only changes from a PyTorch script are the imports.
"""

import math
import time

import shardflow as torch
import shardflow.distributed as dist
import shardflow.nn as nn
from shardflow.models import GPT, GPTConfig
from shardflow.utils.data import DataLoader, RandomSampler, TextCorpus

# -----------------------------------------------------------------------------
# config
batch_size = 32
block_size = 64
n_layer, n_head, n_embd, dropout = 3, 4, 128, 0.0
max_iters = 1000
learning_rate, min_lr, warmup_iters = 2e-3, 2e-4, 50
weight_decay, grad_clip = 0.1, 1.0
eval_interval, eval_iters = 250, 20
seed = 1337
# -----------------------------------------------------------------------------

# distributed setup: under `shardflow run -n N` every rank runs this file; started with
# plain `python` it is a world of one
dist.init_process_group()
torch.backend.tune_allocator()  # keep big NumPy temporaries in the heap (backend/memory.py)
ddp = dist.get_world_size() > 1
rank = dist.get_rank()
master = rank == 0
torch.manual_seed(seed + rank)

# data: the first 90% of the characters train, the last 10% validate
train_data = TextCorpus(block_size=block_size, split="train")
val_data = train_data.split("val")
if master:
    print(f"corpus: {len(train_data.files)} files, vocab {train_data.vocab_size}, "
          f"{len(train_data.data):,} train / {len(val_data.data):,} val characters; "
          f"unigram baseline loss {train_data.unigram_entropy():.3f}")

# an endless stream of random windows; each rank draws its own (different seed)
sampler = RandomSampler(train_data, replacement=True, num_samples=max_iters * batch_size,
                        generator=torch.Generator().manual_seed(seed + rank))
train_loader = DataLoader(train_data, batch_size=batch_size, sampler=sampler, num_workers=1)

# model
model = GPT(GPTConfig(block_size=block_size, vocab_size=train_data.vocab_size, n_layer=n_layer,
                      n_head=n_head, n_embd=n_embd, dropout=dropout))
if master:
    print(f"{model.num_parameters():,} parameters")
optimizer = model.configure_optimizers(weight_decay, learning_rate, betas=(0.9, 0.99))
raw_model = model
if ddp:
    model = nn.parallel.DistributedDataParallel(model)


def get_lr(it):
    """Linear warmup, then cosine decay to min_lr."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    ratio = (it - warmup_iters) / (max_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for name, data in (("train", train_data), ("val", val_data)):
        loader = DataLoader(data, batch_size=batch_size,
                            sampler=RandomSampler(data, replacement=True, num_samples=eval_iters * batch_size,
                                                  generator=torch.Generator().manual_seed(0)))
        losses = [raw_model(x, y)[1].item() for x, y in loader]
        out[name] = sum(losses) / len(losses)
    model.train()
    return out


# training loop
t0 = time.time()
for it, (x, y) in enumerate(train_loader):
    if it % eval_interval == 0 and master:
        losses = estimate_loss()
        print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    for group in optimizer.param_groups:
        group["lr"] = get_lr(it)
    logits, loss = model(x, y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if it % 50 == 0 and master:
        dt = time.time() - t0
        print(f"iter {it}: loss {loss.item():.4f}, {dt:.1f}s elapsed")

if master:
    losses = estimate_loss()
    print(f"final: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    torch.save(raw_model.state_dict(), "gpt_char.safetensors")
    context = torch.tensor(train_data.encode("def ")[None])
    raw_model.eval()
    print(train_data.decode(raw_model.generate(context, 300, temperature=0.8, top_k=20)[0].tolist()))
