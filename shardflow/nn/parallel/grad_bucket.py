"""``GradBucket``: what a DDP communication hook receives (PyTorch's ``dist.GradBucket``).

A bucket is one flat gradient array of ``DistributedDataParallel`` (see ``distributed.py``)
holding the gradients of several parameters back to back. A hook
(``DistributedDataParallel.register_comm_hook(state, hook)``) is called once per bucket, in
bucket order, as soon as every gradient of the bucket is in it, and returns a future-like
object whose ``wait()`` gives the reduced flat array (or a Tensor over it); DDP waits on the
futures at the end of backward and copies the results into ``p.grad``.

``buffer()`` and ``gradients()`` are views of the bucket's memory (a Tensor over the flat
array, and per-parameter Tensors shaped like the parameters), so a hook that writes them in
place (error feedback, PowerSGD's low-rank result) changes the bucket, as in PyTorch.
"""

from __future__ import annotations

from ...autograd.tensor import _wrap

__all__ = ["GradBucket"]


class GradBucket:
    __slots__ = ("_bucket", "_is_last", "_buffer")

    def __init__(self, bucket, is_last: bool):
        self._bucket = bucket  # distributed._Bucket: index, params, offsets, flat
        self._is_last = is_last
        self._buffer = None  # a replacement of another dtype (set_buffer), else the flat array

    def index(self) -> int:
        """Position of the bucket in launch order (the first bucket holds the last layers)."""
        return self._bucket.index

    def buffer(self):
        """The flat gradient array of the bucket, as a Tensor sharing its memory (or the
        tensor ``set_buffer`` put in its place)."""
        return self._buffer if self._buffer is not None else _wrap(self._bucket.flat)

    def gradients(self) -> list:
        """Per-parameter gradients: Tensors viewing the bucket, shaped like the parameters."""
        b = self._bucket
        return [_wrap(b.view(i, p.array.shape)) for i, p in enumerate(b.params)]

    def parameters(self) -> list:
        """The parameters whose gradients the bucket holds, in bucket order."""
        return list(self._bucket.params)

    def is_last(self) -> bool:
        """True for the last bucket of the iteration (PowerSGD counts iterations with it)."""
        return self._is_last

    def set_buffer(self, tensor) -> None:
        """Replace the bucket's buffer by ``tensor`` (same number of elements). Of the bucket's
        dtype: copied into the flat array (``gradients()`` views keep seeing it); of another
        dtype (``fp16_compress_wrapper``'s ``buffer().to(torch.float16)``): ``buffer()``
        returns ``tensor`` itself from now on, as in PyTorch; DDP casts the hook's result
        back into the bucket."""
        arr = getattr(tensor, "array", tensor)
        flat = self._bucket.flat
        if arr.size != flat.size:
            raise ValueError(f"GradBucket.set_buffer: got {arr.size} elements, the bucket holds "
                             f"{flat.size}; pass a tensor of the bucket's size")
        if arr.dtype == flat.dtype:
            flat[...] = arr.reshape(flat.shape)
            self._buffer = None
        else:
            self._buffer = tensor if hasattr(tensor, "array") else _wrap(arr)
