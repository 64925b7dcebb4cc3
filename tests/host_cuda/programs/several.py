"""Run several programs of this package one after another in ONE launch (each launch costs
~1.2 s of rank start-up): ``argv`` names the programs (modules of this package, each called
with no arguments). Each program initializes its own NCCL process group (with a fresh host
CUDA API, so its NCCL call counter starts at zero); this runner destroys that group after it
so the next one starts clean, then prints ``several: passed NAME`` on this rank. A program
that raises aborts the whole job (shardflow's excepthook names the rank), so its test and
the tests of the programs after it fail with the traceback."""

import importlib

import shardflow.distributed as dist


def main(argv):
    package = __name__.rpartition(".")[0]
    for name in argv:
        module = importlib.import_module(f"{package}.{name}")
        code = module.main([])
        assert code in (None, 0), (name, code)
        if dist.is_initialized():
            dist.destroy_process_group()
        print(f"several: passed {name}", flush=True)
