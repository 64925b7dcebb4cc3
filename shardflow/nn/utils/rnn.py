"""Variable-length sequence batches (``torch.nn.utils.rnn``): ``PackedSequence``,
``pack_padded_sequence``, ``pad_packed_sequence``, ``pad_sequence``, ``pack_sequence``,
``unpad_sequence``, ``unpack_sequence``.

Layout (PyTorch's): the batch is sorted by decreasing length (``sorted_indices`` records the
permutation, ``unsorted_indices`` its inverse; both None when the input was already sorted
and ``enforce_sorted=True``; equal lengths in the order of ``argsort(descending=True)``, which
is torch's ``torch.sort`` order). ``data`` holds the valid steps time-major: the
``batch_sizes[0]`` sequences' first elements, then the ``batch_sizes[1]`` still running at
step 1, and so on. Packing and unpacking are gathers with integer index arrays (``x[t_idx,
b_idx]``), so gradients flow through both. RNN/LSTM/GRU accept a ``PackedSequence`` and
return one (see ``nn.modules.rnn``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...autograd import Tensor
from ...ops import argsort, cat, full, stack, tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)``; build it with
    ``pack_padded_sequence`` or ``pack_sequence``, not by hand."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=self.data.double().dtype)

    def float(self) -> PackedSequence:
        return self.to(dtype=self.data.float().dtype)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _as_int_array(x, name) -> np.ndarray:
    if isinstance(x, Tensor):
        arr = x.numpy()
    elif hasattr(x, "detach") and hasattr(x, "numpy"):
        arr = x.detach().cpu().numpy()
    else:
        arr = np.asarray(x)
    if arr.ndim != 1:
        # RuntimeError, as torch's (its C++ check)
        raise RuntimeError(f"'{name}' argument should be a 1D CPU int64 tensor (or a list of ints), "
                           f"but got a {arr.ndim}D one of shape {tuple(arr.shape)}; flatten it, e.g. "
                           f"{name}.view(-1)")
    return arr.astype(np.int64)


def _packed_positions(batch_sizes: np.ndarray):
    """(t, b) of every packed element, in packed order."""
    t_idx = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    starts = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    b_idx = np.arange(int(batch_sizes.sum())) - np.repeat(starts, batch_sizes)
    return t_idx, b_idx


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    if permutation is None:
        return None
    p = permutation.numpy()
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=p.dtype)
    return tensor(inv)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` batch (``(B, T, *)`` with ``batch_first``) whose sequence
    ``b`` has ``lengths[b]`` valid steps."""
    lengths = _as_int_array(lengths, "lengths")
    batch_dim = 0 if batch_first else 1
    if lengths.size != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} "
                           f"(batch_size={input.shape[batch_dim]}, the input's dim {batch_dim}"
                           f"{'' if batch_first else '; pass batch_first=True for a (B, T, *) input'})")
    if lengths.size and lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if lengths.size and lengths.max() > input.shape[1 - batch_dim]:
        raise RuntimeError(f"lengths go up to {lengths.max()} but the input has only "
                           f"{input.shape[1 - batch_dim]} time steps")
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        sorted_indices = None
        sorted_lengths = lengths
    else:
        # torch's torch.sort(lengths, descending=True): equal lengths in its CPU sort's order
        sorted_indices = argsort(tensor(lengths), descending=True)
        order = sorted_indices.numpy()
        sorted_lengths = lengths[order]
        input = input.index_select(batch_dim, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    T = int(sorted_lengths[0])
    batch_sizes = (sorted_lengths[None, :] > np.arange(T)[:, None]).sum(axis=1)
    t_idx, b_idx = _packed_positions(batch_sizes)
    data = input[t_idx, b_idx]
    return PackedSequence(data, tensor(batch_sizes.astype(np.int64)), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Inverse of ``pack_padded_sequence``: ``(padded, lengths)`` in the original batch
    order, padded with ``padding_value`` to the longest length (or ``total_length``)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes.numpy().astype(np.int64)
    T, B = len(batch_sizes), int(batch_sizes[0])
    if total_length is not None:
        if total_length < T:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being {T}")
        T_out = total_length
    else:
        T_out = T
    # gather from [data; padding row]: index data.shape[0] is the padding row
    pad_row = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    source = cat([data, pad_row], 0)
    index = np.full((T_out, B), data.shape[0], dtype=np.int64)
    t_idx, b_idx = _packed_positions(batch_sizes)
    index[t_idx, b_idx] = np.arange(t_idx.size)
    padded = source[index]
    lengths = (batch_sizes[None, :] > np.arange(B)[:, None]).sum(axis=1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.numpy()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tensor(lengths.astype(np.int64))


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack ``(L_i, *)`` tensors into ``(max L, B, *)`` (``(B, max L, *)`` with
    ``batch_first``), padding each with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = max_len - s.shape[0]
        if extra:
            pad = full((extra, *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its ``(L_i, *)`` sequences."""
    lengths = _as_int_array(lengths, "lengths")
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :int(n)] for b, n in enumerate(lengths)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` was made from, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
