"""PyTorch's default DDP communication hooks, on raw arrays through ``shardflow.comm``.

Communication plan per bucket (``W`` ranks, ``N`` elements of float32):

* ``allreduce_hook``: one ``all_reduce(AVG)`` of the ``4N``-byte buffer, in place, started
  at once (asynchronous). The same call DDP makes without a hook (bitwise the same
  result; PyTorch divides by ``W`` first and sums, which rounds differently).
* ``fp16_compress_hook`` / ``bf16_compress_hook``: ``c = buffer.astype(low); c /= W``
  (in the low dtype, as PyTorch), ``all_reduce(SUM)`` of the ``2N``-byte ``c``
  (asynchronous), then the result is cast back into the float32 buffer. Half the bytes;
  the average carries the low dtype's rounding (float16: 11 significant bits and a range
  up to 65504, so huge gradients overflow; bfloat16: float32's range, 8 bits).

``process_group`` (the hook's state) is the group to reduce over; ``None`` means the world,
as in PyTorch (give DDP's group when DDP runs on a subgroup).
"""

from __future__ import annotations

import numpy as np

from ....backend import bfloat16, float16
from ....comm import get_world
from .future import Future

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _group(process_group):
    return process_group if process_group is not None else get_world()


def allreduce_hook(process_group, bucket) -> Future:
    """Average the bucket over the group (the uncompressed baseline)."""
    buf = bucket.buffer().array
    work = _group(process_group).all_reduce(buf, "avg", async_op=True)

    def complete():
        work.wait()
        return buf

    return Future(complete)


def _compress_hook(process_group, bucket, low_np) -> Future:
    group = _group(process_group)
    buf = bucket.buffer().array
    compressed = buf.astype(low_np)  # (N,) low precision
    np.divide(compressed, group.size, out=compressed, casting="unsafe")
    work = group.all_reduce(compressed, "sum", async_op=True)

    def complete():
        work.wait()
        np.copyto(buf, compressed, casting="unsafe")
        return buf

    return Future(complete)


def fp16_compress_hook(process_group, bucket) -> Future:
    """Cast to float16, divide by the world size, all-reduce (sum), cast back."""
    return _compress_hook(process_group, bucket, float16.np)


def bf16_compress_hook(process_group, bucket) -> Future:
    """As :func:`fp16_compress_hook` with bfloat16 (float32's range, no overflow)."""
    return _compress_hook(process_group, bucket, bfloat16.np)
