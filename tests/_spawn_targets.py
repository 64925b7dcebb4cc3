"""Targets for ``shardflow.multiprocessing.spawn`` tests. Spawned children import this module,
so it must stay light (no torch, no shardflow)."""

import os


def write_rank(i, folder, tag):
    with open(os.path.join(folder, f"{tag}{i}"), "w") as fh:
        fh.write(str(i))


def fail_on_one(i):
    if i == 1:
        raise ValueError("rank one refuses")


def exit_with_code(i):
    if i == 0:
        os._exit(3)
