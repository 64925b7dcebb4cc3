"""``torch.quasirandom.SobolEngine``: Sobol' low-discrepancy sequences (PyTorch's engine).

Algorithm (PyTorch's, with its 30-bit integers, ``MAXBIT = 30``, ``MAXDIM = 21201``):

* direction numbers: Joe and Kuo's primitive polynomials and initial numbers (the
  ``new-joe-kuo-6.21201`` table, read from the copy SciPy ships as
  ``scipy/stats/_sobol_direction_numbers.npz``), extended to 30 bits by the recurrence
  ``v_j = v_{j-m} ^ (v_{j-m} >> m) ^ XOR_{k=1}^{m-1} a_k v_{j-k}`` of a degree-``m``
  polynomial with coefficients ``a_k`` (``_direction_numbers``);
* points in Gray-code order: point ``k`` is ``shift ^ XOR of v_b over the set bits b of
  k ^ (k >> 1)``, so consecutive points differ by ``v_{ctz(k)}``; a draw of ``n`` points is a
  cumulative XOR of those steps, ``fast_forward`` the closed form; values are ``point / 2**30``;
* ``scramble=True``: a random linear matrix scramble (lower-triangular binary matrices with
  unit diagonal, applied to each direction number's digits, most significant first) and a
  random digital shift, drawn from shardflow's generator (seeded with ``seed``, else the
  default generator that ``manual_seed`` seeds).

Unscrambled sequences equal PyTorch's bit for bit. Scrambled sequences have the same
structure (each ``2**m``-point block is a digital net: every coordinate puts one point in each
interval ``[i / 2**m, (i + 1) / 2**m)``) but different values from PyTorch's for the same
``seed``, since the random bits come from a different generator.
"""

from __future__ import annotations

import os

import numpy as np

from .backend import as_dtype, dtypes
from .backend import random as _random
from .backend.scipy_lib import scipy_module
from .ops.creation import tensor

__all__ = ["SobolEngine"]


def _direction_numbers(dimension: int, bits: int) -> np.ndarray:
    """(dimension, bits) int64: the direction numbers ``v[d, j] = m_j << (bits - 1 - j)``."""
    path = os.path.join(os.path.dirname(scipy_module("stats").__file__),
                        "_sobol_direction_numbers.npz")
    with np.load(path) as table:
        poly = table["poly"][:dimension].astype(np.int64)  # (D,)
        vinit = table["vinit"][:dimension].astype(np.int64)  # (D, 18)
    degree = np.floor(np.log2(np.maximum(poly, 1))).astype(np.int64)  # (D,) 0 for dimension 0
    v = np.zeros((dimension, bits), dtype=np.int64)
    v[0, :] = 1  # the first dimension: the van der Corput sequence
    rows = np.arange(1, dimension)
    m = degree[1:]
    for j in range(bits):  # m_j (odd, below 2**(j+1)) of every dimension at once
        init = j < m
        if init.any():
            v[rows[init], j] = vinit[rows[init], j]
        rec = ~init
        if not rec.any():
            continue
        r, mr, pr = rows[rec], m[rec], poly[rows[rec]]
        new = v[r, j - mr] ^ (v[r, j - mr] << mr)  # the polynomial's x^m and 1 terms
        for k in range(1, int(mr.max())):  # its interior coefficients a_k
            use = (k < mr) & (((pr >> np.maximum(mr - k, 0)) & 1) == 1)
            new = np.where(use, new ^ (v[r, j - k] << k), new)
        v[r, j] = new
    return v << (bits - 1 - np.arange(bits))


def _lowest_set_bit(k: np.ndarray) -> np.ndarray:
    """Index of the lowest set bit of each positive ``k``."""
    return np.log2(k & -k).astype(np.int64)


class SobolEngine:
    """``SobolEngine(dimension, scramble=False, seed=None)``: draws Sobol' points in
    ``[0, 1)^dimension`` (see the module docstring for the algorithm)."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality "
                             f"for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self._state = _direction_numbers(dimension, self.MAXBIT)  # (D, 30)
        self._shift = np.zeros(dimension, dtype=np.int64)
        if scramble:
            self._scramble()
        self._quasi = self._shift.copy()  # the last point drawn (the shift before any)
        self.num_generated = 0

    # the integer state, as PyTorch's attributes (int64 tensors)
    @property
    def sobolstate(self):
        return tensor(self._state)

    @property
    def shift(self):
        return tensor(self._shift)

    @property
    def quasi(self):
        return tensor(self._quasi)

    def _scramble(self):
        gen = None
        if self.seed is not None:
            gen = _random.Generator()
            gen.manual_seed(self.seed)
        rng = _random.rng(gen)
        bits, d = self.MAXBIT, self.dimension
        self._shift = rng.integers(0, 2, (d, bits)) @ (1 << np.arange(bits, dtype=np.int64))
        ltm = np.tril(rng.integers(0, 2, (d, bits, bits)), -1)
        ltm[:, np.arange(bits), np.arange(bits)] = 1  # unit diagonal: the scramble is invertible
        place = 1 << np.arange(bits - 1, -1, -1, dtype=np.int64)  # digit i (MSB first) -> bit value
        digits = (self._state[:, :, None] & place) != 0  # (D, 30 columns, 30 digits)
        mixed = np.einsum("dij,dcj->dci", ltm, digits.astype(np.int64)) & 1  # (D, 30, 30)
        self._state = mixed @ place

    def _points(self, n: int) -> np.ndarray:
        """(n, D) int64: the next ``n`` points; advances the state."""
        start = self.num_generated
        k = np.arange(start, start + n, dtype=np.int64)
        steps = np.zeros((n, self.dimension), dtype=np.int64)
        pos = k > 0
        steps[pos] = self._state[:, _lowest_set_bit(k[pos])].T
        prev = self._shift if start == 0 else self._quasi
        pts = np.bitwise_xor.accumulate(steps, axis=0) ^ prev  # (n, D)
        if n:
            self._quasi = pts[-1].copy()
        self.num_generated += n
        return pts

    def draw(self, n: int = 1, out=None, dtype=None):
        """The next ``n`` points, shape ``(n, dimension)``, in ``dtype`` (default: the
        default dtype)."""
        d = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
        values = self._points(int(n)).astype(np.float64) * 2.0 ** -self.MAXBIT
        result = tensor(values, dtype=d)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out=None, dtype=None):
        """The next ``2**m`` points; the total drawn must stay a power of 2 (the net property)."""
        n = 2 ** m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require "
                f"n to be a power of 2. {self.num_generated} points have been "
                f"previously generated, then: n={self.num_generated}+2**{m}={total_n}. "
                "If you still want to do this, please use "
                "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        """Back to the first point."""
        self._quasi = self._shift.copy()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skip ``n`` points: the state becomes point ``num_generated + n - 1`` in closed form."""
        n = int(n)
        if n <= 0:
            return self
        last = self.num_generated + n - 1
        gray = last ^ (last >> 1)
        point = self._shift.copy()
        for b in range(self.MAXBIT):
            if (gray >> b) & 1:
                point ^= self._state[:, b]
        self._quasi = point
        self.num_generated += n
        return self

    def __repr__(self):
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"
