"""``shardflow train`` (``shardflow.cli.train.main``) on ranks with ``device="cuda"`` on the
host CUDA stand-in and the fake NCCL: ``argv`` is the train command's arguments. Its exit
code is this program's; NCCL must have been called; prints ``NCCL calls: N``."""

from shardflow.cli.train import main as train_main

from ._common import install_host_cuda


def main(argv):
    cuda_api = install_host_cuda()
    code = train_main(argv)
    calls = cuda_api.calls
    assert calls > 0, calls
    print(f"NCCL calls: {calls}", flush=True)
    return code
