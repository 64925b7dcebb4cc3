"""PowerSGD gradient compression (Vogels, Karimireddy, Jaggi 2019), PyTorch's
``powerSGD_hook`` algorithm and ``PowerSGDState`` arguments, on NumPy/CuPy arrays.

Algorithm, per bucket (``W`` ranks, rank ``r`` = ``matrix_approximation_rank``):

0. Before iteration ``start_powerSGD_iter``: the plain average (``allreduce_hook``), so
   training starts uncompressed. Iterations are counted on the last bucket.
1. Error feedback: the bucket gets the error this rank made last time added to it
   (``e`` starts at zero); a copy ``x`` of the result is kept.
2. Each gradient is seen as a matrix ``M`` (``shape[0]`` rows, the rest as columns,
   ``n x m``). It is compressed if ``(n + m) r * min_compression_rate < n m``; the others
   (biases, vectors, small matrices) are concatenated and all-reduced (``SUM``, then
   ``/ W``), asynchronously.
3. ``P = M Q`` (``n x r``) with ``Q`` (``m x r``) from the previous iteration (warm start)
   or, the first time, standard normal from ``numpy.random.RandomState(random_seed)`` (the
   same on every rank), orthogonalised. All the ``P`` of the bucket go in one
   ``all_reduce(SUM)``.
4. ``P`` is orthogonalised (Gram-Schmidt, column by column, ``orthogonalization_epsilon``
   added to the norms); ``Q = M^T P``; all the ``Q`` in one ``all_reduce(SUM)``, then
   ``Q /= W``.
5. ``M <- P Q^T`` (the rank-``r`` approximation of the averaged gradient, written into the
   bucket), and the new error ``e = x - bucket``.

Bytes handed to the comm layer per compressed ``n x m`` float32 matrix: ``4 (n + m) r``
instead of ``4 n m``. Both reductions of step 3 and 4 run after the bucket is full;
the ``Q`` reduction waits for the ``P`` reduction (it needs ``P``), so DDP's ``wait()``
on the returned future runs steps 4 and 5.

Differences from PyTorch: ``batch_tensors_with_same_shape`` is accepted and ignored; a
zero column of ``P`` stays zero instead of becoming NaN when the epsilon is 0; the random
``Q`` comes from NumPy, not torch's generator, so the first compressed step differs from
PyTorch's in its random projection (the math is the same).
"""

from __future__ import annotations

import math

import numpy as np

from ....backend import get_array_module
from ....comm import get_world
from .default_hooks import allreduce_hook
from .future import Future

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]


class PowerSGDState:
    """PyTorch's ``PowerSGDState`` arguments and defaults; per-bucket error, P and Q memories."""

    def __init__(self, process_group, matrix_approximation_rank: int = 1,
                 start_powerSGD_iter: int = 1_000, min_compression_rate: float = 2,
                 use_error_feedback: bool = True, warm_start: bool = True,
                 orthogonalization_epsilon: float = 0, random_seed: int = 0,
                 compression_stats_logging_frequency: int = 10_000,
                 batch_tensors_with_same_shape: bool = False):
        if matrix_approximation_rank < 1:
            raise ValueError(f"matrix_approximation_rank must be >= 1, got {matrix_approximation_rank}")
        self.process_group = process_group
        self.matrix_approximation_rank = int(matrix_approximation_rank)
        self.start_powerSGD_iter = int(start_powerSGD_iter)
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape
        self.error_dict: dict[int, object] = {}
        self.p_memory_dict: dict[int, object] = {}
        self.q_memory_dict: dict[int, object] = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0

    def maybe_increase_iter(self, bucket) -> None:
        if bucket.is_last():
            self.iter += 1

    def compression_stats(self) -> tuple[float, int, int]:
        """(compression rate, elements before, elements after), summed over compressed steps."""
        after = self.total_numel_after_compression
        rate = self.total_numel_before_compression / after if after else 0.0
        return rate, self.total_numel_before_compression, after

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["process_group"] = None  # a communicator does not travel; set it after loading
        return state


def _should_compress(n: int, m: int, rank: int, min_rate) -> tuple[bool, int, int]:
    uncompressed, compressed = n * m, (n + m) * rank
    return compressed * min_rate < uncompressed, uncompressed, compressed


def _orthogonalize(matrix, epsilon: float) -> None:
    """Gram-Schmidt on the columns of ``matrix`` (n, r), in place."""
    xp = get_array_module(matrix)
    r = matrix.shape[1]
    for i in range(r):
        col = matrix[:, i:i + 1]
        norm = float(xp.linalg.norm(col))
        if norm + epsilon > 0:
            col /= norm + epsilon
        if i + 1 < r:
            rest = matrix[:, i + 1:]
            rest -= col @ (col.T @ rest)


def _add_error_feedback(state: PowerSGDState, idx: int, buf):
    """Step 1: this rank's error from last time added to ``buf`` in place (zero the first
    time); returns a copy of the result, or None without error feedback."""
    if not state.use_error_feedback:
        return None
    xp = get_array_module(buf)
    if idx in state.error_dict:
        buf += state.error_dict[idx]
    else:
        state.error_dict[idx] = xp.zeros_like(buf)
    return buf.copy()


def powerSGD_hook(state: PowerSGDState, bucket) -> Future:
    """Compress the bucket with PowerSGD (module docstring) and return its future."""
    group = state.process_group if state.process_group is not None else get_world()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return allreduce_hook(group, bucket)
    world = group.size
    buf = bucket.buffer().array  # (N,) flat bucket
    xp = get_array_module(buf)
    idx = bucket.index()
    x = _add_error_feedback(state, idx, buf)

    rank_r = state.matrix_approximation_rank
    to_compress, plain = [], []
    for g in bucket.gradients():
        a = g.array
        mat = a.reshape(a.shape[0], -1) if a.ndim > 0 else a.reshape(1, 1)  # (n, m) view
        n, m = mat.shape
        r = min(n, m, rank_r)
        ok, before, after = _should_compress(n, m, r, state.min_compression_rate)
        state.total_numel_before_compression += before
        if ok:
            to_compress.append((mat, r))
            state.total_numel_after_compression += after
        else:
            plain.append(mat)
            state.total_numel_after_compression += before

    # 2. the uncompressed gradients: one flat all-reduce, started now
    flat_plain = (xp.concatenate([p.reshape(-1) for p in plain]) if plain
                  else xp.zeros(0, dtype=buf.dtype))
    work_plain = group.all_reduce(flat_plain, "sum", async_op=True) if flat_plain.size else None

    # 3. P = M Q with Q warm-started (or random, orthogonalised)
    p_sizes = [mat.shape[0] * r for mat, r in to_compress]
    q_sizes = [mat.shape[1] * r for mat, r in to_compress]
    need_random = not state.warm_start or idx not in state.q_memory_dict
    if need_random or state.p_memory_dict.get(idx, xp.zeros(0)).size != sum(p_sizes):
        state.p_memory_dict[idx] = xp.empty(sum(p_sizes), dtype=buf.dtype)
    if need_random:
        qs_mem = xp.asarray(state.rng.standard_normal(sum(q_sizes)).astype(buf.dtype))
        state.q_memory_dict[idx] = qs_mem
    p_mem, q_mem = state.p_memory_dict[idx], state.q_memory_dict[idx]
    ps, qs, po, qo = [], [], 0, 0
    for (mat, r), ps_n, qs_n in zip(to_compress, p_sizes, q_sizes, strict=True):
        ps.append(p_mem[po:po + ps_n].reshape(mat.shape[0], r))  # (n, r)
        qs.append(q_mem[qo:qo + qs_n].reshape(mat.shape[1], r))  # (m, r)
        po, qo = po + ps_n, qo + qs_n
    if need_random:
        for q in qs:
            _orthogonalize(q, state.orthogonalization_epsilon)
    for (mat, _), p, q in zip(to_compress, ps, qs, strict=True):
        xp.matmul(mat, q, out=p)
    work_p = group.all_reduce(p_mem, "sum", async_op=True) if p_mem.size else None

    def complete():
        if work_plain is not None:
            work_plain.wait()
            xp.divide(flat_plain, world, out=flat_plain)
            o = 0
            for mat in plain:
                mat[...] = flat_plain[o:o + mat.size].reshape(mat.shape)
                o += mat.size
        if work_p is not None:
            work_p.wait()
            # 4. orthogonalise P, Q = M^T P, all-reduce the Qs
            for p in ps:
                _orthogonalize(p, state.orthogonalization_epsilon)
            for (mat, _), p, q in zip(to_compress, ps, qs, strict=True):
                xp.matmul(mat.T, p, out=q)
            group.all_reduce(q_mem, "sum")
            xp.divide(q_mem, world, out=q_mem)
            # 5. M <- P Q^T
            for (mat, _), p, q in zip(to_compress, ps, qs, strict=True):
                mat[...] = p @ q.T
        if state.use_error_feedback:
            state.error_dict[idx] = x - buf
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        state.maybe_increase_iter(bucket)
        return buf

    return Future(complete)


def batched_powerSGD_hook(state: PowerSGDState, bucket) -> Future:  # noqa: N802
    """PyTorch's batched PowerSGD: the whole bucket (``N`` elements, zero-padded to
    ``s * s``, ``s = ceil(sqrt(N))``) is one square matrix ``M``, compressed as in
    :func:`powerSGD_hook` steps 1, 3-5 (error feedback on the padded bucket; ``Q`` random the
    first time, from ``state.rng``, and orthogonalised every time, as torch; ``P = M Q``
    all-reduced, orthogonalised, ``Q = M^T P`` all-reduced and divided by ``W``; ``M <- P
    Q^T``). Bytes per bucket: ``8 s r`` instead of ``4 N``; faster than per-gradient PowerSGD,
    less accurate (the gradients' own shapes are ignored). Orthogonalisation uses epsilon 0,
    as torch's batched hook does."""
    group = state.process_group if state.process_group is not None else get_world()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return allreduce_hook(group, bucket)
    world = group.size
    buf = bucket.buffer().array  # (N,) flat bucket
    xp = get_array_module(buf)
    total = buf.size
    side = math.ceil(math.sqrt(total))
    r = state.matrix_approximation_rank
    state.total_numel_before_compression += total
    state.total_numel_after_compression += side * r * 2
    padded = xp.zeros(side * side, dtype=buf.dtype)  # (s * s,)
    padded[:total] = buf
    idx = bucket.index()
    x = _add_error_feedback(state, idx, padded)
    matrix = padded.reshape(side, side)  # (s, s) view
    if not state.warm_start or idx not in state.p_memory_dict:
        state.p_memory_dict[idx] = xp.empty((side, r), dtype=buf.dtype)  # (s, r)
        state.q_memory_dict[idx] = xp.asarray(
            state.rng.standard_normal((side, r)).astype(buf.dtype))  # (s, r)
    p, q = state.p_memory_dict[idx], state.q_memory_dict[idx]
    _orthogonalize(q, 0.0)
    xp.matmul(matrix, q, out=p)
    work_p = group.all_reduce(p, "sum", async_op=True)

    def complete():
        work_p.wait()
        _orthogonalize(p, 0.0)
        xp.matmul(matrix.T, p, out=q)
        group.all_reduce(q, "sum")
        xp.divide(q, world, out=q)
        matrix[...] = p @ q.T
        if state.use_error_feedback:
            state.error_dict[idx] = x - padded
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        buf[...] = padded[:total]
        state.maybe_increase_iter(bucket)
        return buf

    return Future(complete)
