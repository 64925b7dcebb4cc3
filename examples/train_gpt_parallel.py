"""One GPT training script, any layout: 1 process, data parallel, tensor parallel, or both.

    python examples/train_gpt_parallel.py
    shardflow run -n 2 python examples/train_gpt_parallel.py --dp 2
    shardflow run -n 2 python examples/train_gpt_parallel.py --tp 2
    shardflow run -n 4 python examples/train_gpt_parallel.py --dp 2 --tp 2

The model code is the plain GPT; only the layout changes. Parameters become global tensors
(``data_tensor_parallel``: Megatron's column/row split on the ``tp`` mesh dimension,
broadcast elsewhere) and every rank draws the same global batch, laid out ``S(0)`` over the
``dp`` dimension. Every layout computes the same losses as one process (up to float32
rounding). ``SHARDFLOW_DEBUG=plan`` prints the collectives of the first step.
"""

import argparse

import numpy as np

import shardflow as torch
from shardflow import _config
from shardflow.distributed import comm_plan, sbp
from shardflow.distributed.tensor_parallel import data_tensor_parallel
from shardflow.models import GPT, GPTConfig
from shardflow.nn.utils import clip_grad_norm_
from shardflow.utils.data import TextCorpus

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--dp", type=int, default=1, help="data-parallel ranks")
parser.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks")
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--block-size", type=int, default=32)
parser.add_argument("--n-layer", type=int, default=2)
parser.add_argument("--n-head", type=int, default=4)
parser.add_argument("--n-embd", type=int, default=64)
parser.add_argument("--lr", type=float, default=3e-3)
parser.add_argument("--seed", type=int, default=1337)
args = parser.parse_args()

torch.manual_seed(args.seed)  # the same on every rank: same init, same batches
data = TextCorpus(block_size=args.block_size, split="train", max_bytes=200_000)
model = GPT(GPTConfig(block_size=args.block_size, vocab_size=data.vocab_size,
                      n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd))
mesh, data_sbp = data_tensor_parallel(model, args.dp, args.tp, model.tensor_parallel_plan())
rank = torch.comm.get_world().rank
optimizer = model.configure_optimizers(0.1, args.lr)
rng = np.random.default_rng(args.seed)
show_plan = "plan" in _config.debug_flags()

for step in range(args.steps):
    starts = rng.integers(0, len(data), size=args.batch_size)
    x, y = (torch.tensor(np.stack(t)) for t in zip(*(data[int(i)] for i in starts)))  # (B, T)
    x = x.to_global(mesh, [sbp.broadcast] * 2).to_global(sbp=data_sbp)
    y = y.to_global(mesh, [sbp.broadcast] * 2).to_global(sbp=data_sbp)
    with comm_plan() as plan:
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
    if step == 0 and show_plan and rank == 0:
        print(f"communication plan of one step (dp={args.dp}, tp={args.tp}):\n{plan}")
    clip_grad_norm_(model.parameters(), 1.0)  # the global norm: split gradients are summed
    optimizer.step()
    value = loss.item()
    if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
        print(f"step {step:3d}  loss {value:.6f}")
if rank == 0:
    local = sum(p.array.nbytes for p in model.parameters())
    print(f"final loss {value:.6f}; this rank holds {local:,} bytes of parameters")
