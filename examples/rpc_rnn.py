"""Distributed RNN, PyTorch's RPC RNN example in small: the embedding table and the decoder
live on a parameter server ("ps"), the LSTM on the trainer; forward crosses RPC twice,
backward runs with distributed autograd and one DistributedOptimizer steps all three parts.

Run (rank 0 is the trainer, rank 1 the parameter server)::

    shardflow run -n 2 examples/rpc_rnn.py --steps 4

The same file runs on PyTorch with its ``shardflow`` imports changed to ``torch``.
"""

import argparse
import os

import numpy as np

import shardflow as torch
import shardflow.distributed.autograd as dist_autograd
import shardflow.distributed.rpc as rpc
import shardflow.nn as nn
import shardflow.optim as optim
from shardflow.distributed.optim import DistributedOptimizer
from shardflow.distributed.rpc import RRef

ntoken, ninp, nhid, nlayers = 12, 6, 8, 2
seq_len, batch_size = 5, 3


def init_weights(module, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))


def _call_method(method, rref, *args, **kwargs):
    return method(rref.local_value(), *args, **kwargs)


def _remote_method(method, rref, *args, **kwargs):
    return rpc.rpc_sync(rref.owner(), _call_method, args=[method, rref] + list(args), kwargs=kwargs)


def _parameter_rrefs(module):
    return [RRef(param) for param in module.parameters()]


class EmbeddingTable(nn.Module):
    def __init__(self, ntoken, ninp, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        init_weights(self, 1)

    def forward(self, input):
        return self.drop(self.encoder(input))


class Decoder(nn.Module):
    def __init__(self, ntoken, nhid, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        init_weights(self, 2)

    def forward(self, output):
        return self.decoder(self.drop(output))


class RNNModel(nn.Module):
    def __init__(self, ps, ntoken, ninp, nhid, nlayers, dropout=0.0):
        super().__init__()
        self.emb_table_rref = rpc.remote(ps, EmbeddingTable, args=(ntoken, ninp, dropout))
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        init_weights(self.rnn, 3)
        self.decoder_rref = rpc.remote(ps, Decoder, args=(ntoken, nhid, dropout))

    def forward(self, input, hidden):
        emb = _remote_method(EmbeddingTable.forward, self.emb_table_rref, input)
        output, hidden = self.rnn(emb, hidden)
        decoded = _remote_method(Decoder.forward, self.decoder_rref, output)
        return decoded, hidden

    def parameter_rrefs(self):
        remote_params = []
        remote_params.extend(_remote_method(_parameter_rrefs, self.emb_table_rref))
        remote_params.extend(_parameter_rrefs(self.rnn))
        remote_params.extend(_remote_method(_parameter_rrefs, self.decoder_rref))
        return remote_params


def get_next_batch(steps):
    rng = np.random.default_rng(7)
    for step in range(steps):
        data = torch.from_numpy(rng.integers(0, ntoken, size=(seq_len, batch_size)))
        target = torch.from_numpy(rng.integers(0, ntoken, size=(seq_len, batch_size)))
        yield step, data, target


def run_trainer(steps):
    model = RNNModel("ps", ntoken, ninp, nhid, nlayers)
    opt = DistributedOptimizer(optim.SGD, model.parameter_rrefs(), lr=0.5)
    criterion = torch.nn.CrossEntropyLoss()
    hidden = (torch.zeros(nlayers, batch_size, nhid), torch.zeros(nlayers, batch_size, nhid))
    for step, data, target in get_next_batch(steps):
        with dist_autograd.context() as context_id:
            hidden = (hidden[0].detach(), hidden[1].detach())   # truncated BPTT
            output, hidden = model(data, hidden)
            loss = criterion(output.view(-1, ntoken), target.view(-1))
            dist_autograd.backward(context_id, [loss])
            opt.step(context_id)
        print(f"trainer step {step} loss {loss.item():.9g}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="RPC RNN with a remote embedding and decoder")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if rank == 0:
        rpc.init_rpc("trainer", rank=rank, world_size=world_size)
        run_trainer(args.steps)
    else:
        rpc.init_rpc("ps", rank=rank, world_size=world_size)
    rpc.shutdown()


if __name__ == "__main__":
    main()
