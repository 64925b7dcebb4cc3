# ruff: noqa: I001, W293  (the example's own style kept)
# PyTorch's minGPT-DDP example, distributed/minGPT-ddp/mingpt/main.py (pytorch/examples, commit
# b4718236bbaf2bb685d4ceae334275ded4be1f09, BSD-3-Clause), run as its run_example.sh runs it,
# on 2 processes: `torchrun --standalone --nproc_per_node=2 main.py` (shardflow: its torchrun
# command line). Changes, and only these: hydra and omegaconf are not installed, so the
# config is gpt2_train_cfg.yaml's (commit 4fe95ae) as a plain dict `cfg` passed to `main`,
# hydra's command-line overrides (`trainer_config.max_epochs=1`) applied to it, with small
# sizes (a 3-layer model of width 16 on a small local input.txt, batch 4, 2 epochs,
# no loader workers); with no GPU the backend is "gloo" and `torch.cuda.set_device` is
# skipped.
import os
import torch
from torch.utils.data import random_split
from torch.distributed import init_process_group, destroy_process_group
from model import GPT, GPTConfig, OptimizerConfig, create_optimizer
from trainer import Trainer, TrainerConfig
from char_dataset import CharDataset, DataConfig


def ddp_setup():
    init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))

def get_train_objs(gpt_cfg: GPTConfig, opt_cfg: OptimizerConfig, data_cfg: DataConfig):
    dataset = CharDataset(data_cfg)
    train_len = int(len(dataset) * data_cfg.train_split)
    train_set, test_set = random_split(dataset, [train_len, len(dataset) - train_len])

    gpt_cfg.vocab_size = dataset.vocab_size
    gpt_cfg.block_size = dataset.block_size
    model = GPT(gpt_cfg)
    optimizer = create_optimizer(model, opt_cfg)
    
    return model, optimizer, train_set, test_set

def main(cfg):
    ddp_setup()

    gpt_cfg = GPTConfig(**cfg['gpt_config'])
    opt_cfg = OptimizerConfig(**cfg['optimizer_config'])
    data_cfg = DataConfig(**cfg['data_config'])
    trainer_cfg = TrainerConfig(**cfg['trainer_config'])

    model, optimizer, train_data, test_data = get_train_objs(gpt_cfg, opt_cfg, data_cfg)
    trainer = Trainer(trainer_cfg, model, optimizer, train_data, test_data)
    trainer.train()

    destroy_process_group()


# gpt2_train_cfg.yaml, small
cfg = {
    "data_config": {"path": "input.txt", "block_size": 8, "train_split": 0.9, "truncate": 1.0},
    "gpt_config": {"n_layer": 3, "n_head": 2, "n_embd": 16},
    "trainer_config": {"max_epochs": 2, "batch_size": 4, "data_loader_workers": 0, "grad_norm_clip": 1.0,
                       "snapshot_path": "gpt_snapshot.pt", "save_every": 1, "use_amp": True},
    "optimizer_config": {"weight_decay": 0.1, "learning_rate": 0.0003},
}

if __name__ == "__main__":
    import sys
    for override in sys.argv[1:]:  # hydra's `group.key=value` (ints and strings here)
        key, value = override.split("=", 1)
        group, name = key.split(".")
        cfg[group][name] = type(cfg[group][name])(value)
    main(cfg)
