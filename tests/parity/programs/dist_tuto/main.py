# ruff: noqa: I001, UP004, UP008, UP031, E741  (the tutorial's own style kept)
# PyTorch's tutorial "Writing Distributed Applications with PyTorch" (pytorch/tutorials,
# intermediate_source/dist_tuto.rst, commit 00683b5dbf860a0fb4b6997331a457a471a7de96,
# BSD-3-Clause), its code blocks in one file: the `init_process` template that starts 2
# torch.multiprocessing Processes, blocking point-to-point (send/recv), non-blocking
# point-to-point (isend/irecv + req.wait()), all_reduce on dist.new_group([0, 1]) with
# dist.reduce_op.SUM, the distributed synchronous SGD (Partition, DataPartitioner,
# partition_dataset, average_gradients) and the ring all-reduce built from isend/recv. `Net`
# is the one of the tutorial's companion repository (seba-1511/dist_tuto.pth, train_dist.py),
# which the tutorial uses without showing it.
#
# Changes, and only these:
# * the tutorial's `run` functions are named run_blocking, run_nonblocking, run_all_reduce,
#   run_sgd, and run_ring (a `run` for the ring `allreduce(send, recv)`, which the tutorial
#   gives without one: each rank sends ones times rank + 1); `python main.py NAME` runs one;
# * two more ways to start it, for a launcher that starts the ranks (`shardflow run -n 2`,
#   `mpirun -n 2`, torchrun): `python main.py NAME mpi` is the tutorial's own MPI form
#   ("Replace the content under `if __name__ == '__main__':` with `init_process(0, 0, run,
#   backend='mpi')`"; every rank's `run` is then given rank 0, so only run_sgd and run_ring,
#   which ask dist.get_rank(), work in it, in torch too), and `python main.py NAME env` calls
#   `init_process(RANK, WORLD_SIZE, run)` from the launcher's variables (the tutorial's
#   "Environment Variable" initialization method). torch runs the Process form as written;
#   shardflow the `env` form (the Process form's children cannot form an MPI job:
#   docs/COMPAT.md) and the `mpi` form;
# * data: a synthetic MNIST-like set of 64 images (NumPy, seed 0) instead of
#   datasets.MNIST; the global batch is 16 instead of 128, and `bsz = 16 // size` as in
#   train_dist.py (the tutorial's `128 / float(size)` is a float, which DataLoader refuses with
#   a ValueError in torch 2.13 as in shardflow); 2 epochs instead of 10;
# * so that the two frameworks' runs can be compared step by step: the model starts from the
#   state dict in `net_init.pt` (written by the test; each framework draws its own random
#   weights), Net's two dropouts are left out and the DataLoader does not shuffle (each
#   framework draws its own masks and permutations);
# * MASTER_PORT is 29518 (not 29500, which other jobs on a test machine may hold).
import os
import sys
from math import ceil
from random import Random

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.multiprocessing import Process


def init_process(rank, size, fn, backend='gloo'):
    """ Initialize the distributed environment. """
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = '29518'
    dist.init_process_group(backend, rank=rank, world_size=size)
    fn(rank, size)


"""Blocking point-to-point communication."""

def run_blocking(rank, size):
    tensor = torch.zeros(1)
    if rank == 0:
        tensor += 1
        # Send the tensor to process 1
        dist.send(tensor=tensor, dst=1)
    else:
        # Receive tensor from process 0
        dist.recv(tensor=tensor, src=0)
    print('Rank ', rank, ' has data ', tensor[0])


"""Non-blocking point-to-point communication."""

def run_nonblocking(rank, size):
    tensor = torch.zeros(1)
    req = None
    if rank == 0:
        tensor += 1
        # Send the tensor to process 1
        req = dist.isend(tensor=tensor, dst=1)
        print('Rank 0 started sending')
    else:
        # Receive tensor from process 0
        req = dist.irecv(tensor=tensor, src=0)
        print('Rank 1 started receiving')
    req.wait()
    print('Rank ', rank, ' has data ', tensor[0])


""" All-Reduce example."""
def run_all_reduce(rank, size):
    """ Simple point-to-point communication. """
    group = dist.new_group([0, 1])
    tensor = torch.ones(1)
    dist.all_reduce(tensor, op=dist.reduce_op.SUM, group=group)
    print('Rank ', rank, ' has data ', tensor[0])


""" Dataset partitioning helper """
class Partition(object):

    def __init__(self, data, index):
        self.data = data
        self.index = index

    def __len__(self):
        return len(self.index)

    def __getitem__(self, index):
        data_idx = self.index[index]
        return self.data[data_idx]


class DataPartitioner(object):

    def __init__(self, data, sizes=[0.7, 0.2, 0.1], seed=1234):
        self.data = data
        self.partitions = []
        rng = Random()
        rng.seed(seed)
        data_len = len(data)
        indexes = [x for x in range(0, data_len)]
        rng.shuffle(indexes)

        for frac in sizes:
            part_len = int(frac * data_len)
            self.partitions.append(indexes[0:part_len])
            indexes = indexes[part_len:]

    def use(self, partition):
        return Partition(self.data, self.partitions[partition])


class Net(nn.Module):
    """ Network architecture. """

    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def synthetic_mnist(n=64):
    """64 MNIST-like images and labels (the change above)."""
    g = np.random.default_rng(0)
    labels = g.integers(0, 10, size=n)
    images = g.standard_normal((n, 1, 28, 28)).astype(np.float32) * 0.5
    images[np.arange(n), 0, labels * 2 + 4, 4:24] += 2.0  # a class-dependent stroke
    return torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


""" Partitioning MNIST """
def partition_dataset():
    dataset = synthetic_mnist()
    size = dist.get_world_size()
    bsz = 16 // size
    partition_sizes = [1.0 / size for _ in range(size)]
    partition = DataPartitioner(dataset, partition_sizes)
    partition = partition.use(dist.get_rank())
    train_set = torch.utils.data.DataLoader(partition,
                                         batch_size=bsz,
                                         shuffle=False)
    return train_set, bsz


""" Distributed Synchronous SGD Example """
def run_sgd(rank, size):
    torch.manual_seed(1234)
    train_set, bsz = partition_dataset()
    model = Net()
    model.load_state_dict(torch.load('net_init.pt'))
    optimizer = optim.SGD(model.parameters(),
                          lr=0.01, momentum=0.5)

    num_batches = ceil(len(train_set.dataset) / float(bsz))
    for epoch in range(2):
        epoch_loss = 0.0
        for data, target in train_set:
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            epoch_loss += loss.item()
            loss.backward()
            average_gradients(model)
            optimizer.step()
        print('Rank ', dist.get_rank(), ', epoch ',
              epoch, ': ', epoch_loss / num_batches)


""" Gradient averaging. """
def average_gradients(model):
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce(param.grad.data, op=dist.reduce_op.SUM)
        param.grad.data /= size


""" Implementation of a ring-reduce with addition. """
def allreduce(send, recv):
   rank = dist.get_rank()
   size = dist.get_world_size()
   send_buff = send.clone()
   recv_buff = send.clone()
   accum = send.clone()

   left = ((rank - 1) + size) % size
   right = (rank + 1) % size

   for i in range(size - 1):
       if i % 2 == 0:
           # Send send_buff
           send_req = dist.isend(send_buff, right)
           dist.recv(recv_buff, left)
           accum[:] += recv_buff[:]
       else:
           # Send recv_buff
           send_req = dist.isend(recv_buff, right)
           dist.recv(send_buff, left)
           accum[:] += send_buff[:]
       send_req.wait()
   recv[:] = accum[:]


def run_ring(rank, size):
    send = torch.ones(3) * (rank + 1)
    recv = torch.zeros(3)
    allreduce(send, recv)
    print('Rank ', rank, ' ring all-reduce ', recv)


if __name__ == "__main__":
    run = globals()["run_" + sys.argv[1]]
    if sys.argv[2:] == ["mpi"]:
        init_process(0, 0, run, backend='mpi')
    elif sys.argv[2:] == ["env"]:
        init_process(int(os.environ['RANK']), int(os.environ['WORLD_SIZE']), run)
    else:
        size = 2
        processes = []
        for rank in range(size):
            p = Process(target=init_process, args=(rank, size, run))
            p.start()
            processes.append(p)

        for p in processes:
            p.join()
