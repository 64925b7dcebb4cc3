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

* ``fp16_compress_wrapper(hook)`` / ``bf16_compress_wrapper(hook)``: ``hook`` run on the
  bucket cast to the low dtype (``bucket.set_buffer(buffer.to(low))``), its result copied
  back into that low buffer; DDP casts it into the float32 bucket. Wrapping
  ``allreduce_hook`` averages in the low dtype (one ``all_reduce(AVG)`` of ``2N`` bytes).

Hook futures give Tensors, as PyTorch's (``fut.value()`` is the reduced buffer).

``process_group`` (the hook's state) is the group to reduce over; ``None`` means the world,
as in PyTorch (give DDP's group when DDP runs on a subgroup).
"""

from __future__ import annotations

import numpy as np

from ....autograd.tensor import _wrap
from ....backend import bfloat16, float16
from ....comm import get_world
from .future import Future

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def _group(process_group):
    return process_group if process_group is not None else get_world()


def allreduce_hook(process_group, bucket) -> Future:
    """Average the bucket over the group (the uncompressed baseline)."""
    tensor = bucket.buffer()
    buf = tensor.array
    work = _group(process_group).all_reduce(buf, "avg", async_op=True)

    def complete():
        work.wait()
        return tensor

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
        return _wrap(buf)

    return Future(complete)


def fp16_compress_hook(process_group, bucket) -> Future:
    """Cast to float16, divide by the world size, all-reduce (sum), cast back."""
    return _compress_hook(process_group, bucket, float16.np)


def bf16_compress_hook(process_group, bucket) -> Future:
    """As :func:`fp16_compress_hook` with bfloat16 (float32's range, no overflow)."""
    return _compress_hook(process_group, bucket, bfloat16.np)


def _compress_wrapper(hook, low):
    def wrapped(hook_state, bucket) -> Future:
        bucket.set_buffer(bucket.buffer().to(low))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            low_buffer = bucket.buffer()
            low_buffer.copy_(fut.value())  # in place: the low buffer is the result
            return low_buffer

        return fut.then(decompress)

    wrapped.__name__ = ("fp16" if low is float16 else "bf16") + "_compress_wrapper_hook"
    return wrapped


def fp16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to float16; its result cast back by DDP
    (``fp16_compress_wrapper(allreduce_hook)`` averages in float16)."""
    return _compress_wrapper(hook, float16)


def bf16_compress_wrapper(hook):
    """As :func:`fp16_compress_wrapper` with bfloat16."""
    return _compress_wrapper(hook, bfloat16)
