"""PyTorch's CPU random stream, draw for draw: ``manual_seed(s)`` then ``rand``, ``randn``,
``randint``, ``randperm``, ``bernoulli``, dropout masks, ``nn.init`` fills and data shuffles give
the numbers torch 2.x gives on the CPU with the same seed.

The engine is torch's (``ATen/core/MT19937RNGEngine.h``): a 32-bit Mersenne Twister seeded by
``init_genrand(seed & 0xffffffff)``. NumPy's ``MT19937`` bit generator is the same twister, so
its state is set to torch's seeding (the key recurrence below, through the public ``state``
setter) and ``random_raw`` yields torch's ``random()`` outputs. ``random64()`` is two of them,
the first as the high word. On top, each distribution is the transformation torch's CPU
kernels apply (``ATen/core/DistributionsHelper.h``, ``TransformationHelper.h``,
``ATen/native/cpu/DistributionTemplates.h``), vectorised over the elements in the order the
kernel visits them (memory order):

* uniform, float/half/bfloat16: ``(random() & (2^24 - 1)) * 2^-24`` in float32, times
  ``to - from`` plus ``from``; a value rounded up to ``to`` becomes ``from``. float64: 53 bits
  of ``random64()``.
* normal, a contiguous tensor of >= 16 elements: every element drawn uniform first, then
  Box-Muller on blocks of 16 (``u1 = 1 - d[j]``, ``u2 = d[j + 8]``, ``d[j] = r cos``,
  ``d[j + 8] = r sin``); when the size is not a multiple of 16 the last 16 are drawn again and
  transformed again. half/bfloat16 draw 16 per block in float32. Smaller or strided tensors:
  one ``normal_distribution<double>`` per element, two 53-bit uniforms making two values, the
  second cached in the generator for the next draw (``manual_seed`` clears it).
* integers in ``[lo, hi)``: ``random() % (hi - lo) + lo`` (``random64()`` when the range is
  >= 2^32); ``random_()`` with no range: ``random64() % 2^63`` for int64 and float64, else
  ``random() % (max + 1)``.
* ``randperm(n)``: ``for i < n - 1: z = random() % (n - i); swap(r[i], r[i + z])``.
* bernoulli with a number ``p`` (and so dropout): ``uniform53 < p``; with a tensor of float32
  probabilities ``uniform24 < p`` (float64: 53 bits).
* exponential ``-log1p(-u53) / lambda``; cauchy ``median + sigma tan(pi (u53 - 1/2))``;
  geometric ``ceil(log(u53) / log1p(-p))``; log-normal ``exp`` of the cached normal.

torch's AVX2 Box-Muller uses avx_mathfun's float32 log/sin/cos; so does this file
(``avx_mathfun.py``, with the compiler's fused multiply-adds), and the float32 normals are
torch's bits (with NumPy's log/sin/cos 14% of them were an ulp off). Every integer,
permutation, mask and uniform value is identical too. float64 normals use NumPy's
log/cos/sin where torch's scalar loop uses the C library's: an ulp apart now and then. Draws with no torch counterpart
here (gamma, poisson, binomial, the samplers of ``distributions``) use NumPy's algorithms on
this same twister: reproducible under ``manual_seed``, not torch's numbers.
"""

from __future__ import annotations

import math

import numpy as np

from .avx_mathfun import log256, sincos256
from .xp import device_of, to_device

_M24 = np.uint64((1 << 24) - 1)
_M53 = np.uint64((1 << 53) - 1)
_TWO_PI_F32 = np.float32(2.0 * np.pi)
_CHUNK = 1 << 16  # elements drawn per block: the temporaries stay near 1 MB whatever the tensor


def seeded_state(seed: int) -> dict:
    """NumPy ``MT19937.state`` for torch's seeding of ``seed`` (``init_genrand`` of its low
    32 bits; ``pos = 624`` makes the first draw twist, as torch's ``left_ = 1`` does)."""
    key = np.empty(624, dtype=np.uint64)
    x = seed & 0xFFFFFFFF
    key[0] = x
    for i in range(1, 624):
        x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
        key[i] = x
    return {"bit_generator": "MT19937", "state": {"key": key.astype(np.uint32), "pos": 624}}


_KERNEL_FROM = 1 << 14  # elements from which randperm's compiled swap loop (kernels/shuffle.py) pays


def raw32(mt: np.random.MT19937, n: int) -> np.ndarray:
    """``n`` of torch's ``random()`` (uint32 values in uint64)."""
    # NumPy's own loop: 2.7-4 ns an output, as fast as the compiled twister this replaced
    # (kernels/mt19937.py, within 6% from 2^18 outputs up, slower below), which cost every
    # fresh install 0.6-1 s of compiling at its first large draw (docs/KERNELS.md, session 39)
    return mt.random_raw(n)


def raw64(mt: np.random.MT19937, n: int) -> np.ndarray:
    """``n`` of torch's ``random64()``: two ``random()``, the first the high word."""
    r = mt.random_raw(2 * n).reshape(n, 2)
    return (r[:, 0] << np.uint64(32)) | r[:, 1]


def uniform53(mt, n: int) -> np.ndarray:
    """``uniform_real_distribution<double>(0, 1)``: float64 in [0, 1)."""
    return (raw64(mt, n) & _M53).astype(np.float64) * 2.0**-53


def uniform24(mt, n: int) -> np.ndarray:
    """``uniform_real_distribution<float>(0, 1)``: float32 in [0, 1)."""
    return (raw32(mt, n) & _M24).astype(np.float32) * np.float32(2.0**-24)


# ----------------------------------------------------------------------------- element order
def memory_order(shape, strides) -> tuple:
    """The axis order torch's TensorIterator visits a tensor in (outermost first): axes by
    decreasing stride, ties kept in order, so a transposed view is filled in memory order."""
    return tuple(sorted(range(len(shape)), key=lambda a: -abs(strides[a])))


def dense_permuted(a) -> bool:
    """True when ``a`` is an axis permutation of a contiguous array (torch's "non-overlapping
    and dense"): torch's ``empty_like`` keeps such a tensor's strides, so a mask or a ``*_like``
    draw for it is filled in its memory order, not in its logical order."""
    expected = a.itemsize
    for ax in reversed(memory_order(a.shape, a.strides)):
        if a.shape[ax] != 1 and a.strides[ax] != expected:
            return False
        expected *= a.shape[ax]
    return True


def like(a: np.ndarray, dtype) -> np.ndarray:
    """torch's ``empty_like(a)`` on the host: ``a``'s layout when it is dense (a transposed
    view stays transposed), else C order."""
    if a.flags.c_contiguous or not dense_permuted(a):
        return np.empty(a.shape, dtype)
    return np.empty_like(a, dtype=dtype, order="K")


def cast(values: np.ndarray, dtype) -> np.ndarray:
    """``values`` as ``dtype`` (bfloat16 through float32, as ml_dtypes needs)."""
    if np.dtype(dtype).kind == "V" and values.dtype != np.float32:
        values = values.astype(np.float32)
    return values.astype(dtype, copy=False)


def draw_into(array, draw) -> None:
    """Fill ``array`` (host or device, any layout) with ``draw(out)``: a draw given a flat
    ``out`` (a contiguous host array: no temporary as large as the tensor) writes into it and
    returns it; given None, or one that returns other values, the values (flat, in visiting
    order) are cast and written in the order torch's kernel visits the array."""
    flat = array.reshape(-1) if isinstance(array, np.ndarray) and array.flags.c_contiguous else None
    values = draw(flat)
    if values is flat:
        return
    values = cast(np.asarray(values), array.dtype)
    if isinstance(array, np.ndarray):
        fill(array, values)
    else:  # a device array: C order (device arrays here are contiguous)
        array[...] = to_device(values.reshape(array.shape), device_of(array))


def fill(out: np.ndarray, flat_values) -> None:
    """Write ``flat_values`` (in visiting order) into ``out`` (any layout), as the kernel does."""
    if out.ndim <= 1 or out.flags.c_contiguous:
        out.reshape(-1)[...] = flat_values  # (a view for a contiguous array)
        return
    order = memory_order(out.shape, out.strides)
    np.transpose(out, order)[...] = np.asarray(flat_values).reshape([out.shape[a] for a in order])


# ----------------------------------------------------------------------------- distributions
def _new_or(out, n: int, dtype) -> np.ndarray:
    return np.empty(n, dtype) if out is None else out


def _complex_pairs(values: np.ndarray, dtype, out=None) -> np.ndarray:
    """``2n`` real draws as ``n`` complex numbers (re, im, re, im, ...): torch draws a complex
    tensor as its ``view_as_real``, so both parts come from the stream, interleaved."""
    out = _new_or(out, values.size // 2, dtype)
    out.real, out.imag = values[0::2], values[1::2]
    return out


def uniform(gen, n: int, low: float, high: float, dtype, out=None) -> np.ndarray:
    """``n`` values of ``uniform_(low, high)`` for a tensor of ``dtype``, in visiting order,
    written into ``out`` (flat, ``dtype``) when given. The kernel computes ``u * (to - from) +
    from`` with one rounding (a fused multiply-add): float32 products of 24-bit numbers are
    exact in float64; float64 ones go through long double (exact on x86 but for rare double
    roundings: 0.03-0.2% of values 1 ulp off). A complex dtype draws ``2n`` values of its
    parts' dtype (``view_as_real``), each part uniform on ``[low, high)``."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = dtype.type(0).real.dtype
        return _complex_pairs(uniform(gen, 2 * n, low, high, part), dtype, out)
    mt = gen.mt
    out = _new_or(out, n, dtype)
    if dtype == np.float64:
        lo, hi = float(low), float(high)
        for s in range(0, n, _CHUNK):
            m = min(_CHUNK, n - s)
            v = (uniform53(mt, m).astype(np.longdouble) * np.longdouble(hi - lo) + np.longdouble(lo)).astype(np.float64)
            v[v == hi] = lo  # a value rounded up to `to` becomes `from`
            out[s:s + m] = v
        return out
    lo32, hi32 = np.float32(low), np.float32(high)
    width, base = np.float64(hi32 - lo32), np.float64(lo32)
    top, bottom = np.asarray(hi32).astype(dtype), np.asarray(lo32).astype(dtype)
    for s in range(0, n, _CHUNK):
        m = min(_CHUNK, n - s)
        v = (uniform24(mt, m).astype(np.float64) * width + base).astype(np.float32)
        v = v.astype(dtype) if dtype != np.float32 else v  # half/bfloat16: cast, then the same check
        v[v == top] = bottom
        out[s:s + m] = v
    return out


# Draws from which float32 normals take the compiled Box-Muller: below, NumPy's passes cost at
# most ~17 ms a draw (2^18: 17 vs 5 ms), where the kernels' first use costs a fresh install
# about 1 s of compiling (4 kernels) and a warm start their loads: a model's init of small
# embeddings (GPT-mini's 2^16) no longer pays either (docs/KERNELS.md, session 39).
_BOX_MULLER_KERNEL_FROM = 1 << 18


def _box_muller16(d: np.ndarray, mean, std, dtype, compiled: bool) -> np.ndarray:
    """torch's ``NormalFill16`` on rows of 16 uniforms (``d``: (k, 16)), in ``dtype``'s opmath;
    ``compiled``: the float32 kernels may be used (a draw of ``_BOX_MULLER_KERNEL_FROM`` on)."""
    if dtype == np.float64:
        u1, u2 = 1.0 - d[:, :8], d[:, 8:]
        radius = np.sqrt(-2.0 * np.log(u1))
        theta = 2.0 * np.pi * u2
        return np.concatenate([radius * np.cos(theta) * std + mean, radius * np.sin(theta) * std + mean], 1)
    # float32, as the kernel: avx_mathfun's log and sincos (backend/avx_mathfun.py), torch's bits
    from .. import kernels

    if compiled and kernels.enabled():
        from ..kernels import box_muller

        return box_muller.normal16(d, mean, std)  # the same bits, ~3.5x faster
    radius = log256(np.float32(1) - d[:, :8])
    radius *= np.float32(-2)
    np.sqrt(radius, out=radius)
    sin, cos = sincos256(d[:, 8:] * _TWO_PI_F32)
    out = np.empty(d.shape, np.float32)
    np.multiply(radius, cos, out=out[:, :8])
    np.multiply(radius, sin, out=out[:, 8:])
    if std != 1.0 or mean != 0.0:  # fma(n, std, mean): one rounding, exact in float64
        out = (out.astype(np.float64) * np.float64(np.float32(std)) + np.float64(np.float32(mean))).astype(np.float32)
    return out


_ROWS = _CHUNK // 16  # Box-Muller blocks transformed at a time


def _normal_fill(gen, n: int, mean, std, out: np.ndarray) -> np.ndarray:
    """``normal_fill`` into ``out`` (flat, the tensor's dtype): a contiguous tensor of
    ``n >= 16`` elements."""
    mt = gen.mt
    k = n // 16
    compiled = n >= _BOX_MULLER_KERNEL_FROM
    if out.dtype in (np.float32, np.float64):  # uniforms straight into the output, then blocks
        opmath = out.dtype
        draw = uniform53 if opmath == np.float64 else uniform24
        for s in range(0, n, _CHUNK):
            m = min(_CHUNK, n - s)
            out[s:s + m] = draw(mt, m)
        for r in range(0, k, _ROWS):
            rows = min(_ROWS, k - r)
            block = out[16 * r:16 * (r + rows)]
            block[...] = _box_muller16(block.reshape(rows, 16), mean, std, opmath, compiled).reshape(-1)
        if n % 16:
            out[n - 16:] = _box_muller16(draw(mt, 16).reshape(1, 16), mean, std, opmath, compiled).reshape(-1)
        return out
    # half/bfloat16: 16 float32 uniforms per block, transformed, then cast
    for r in range(0, k, _ROWS):
        rows = min(_ROWS, k - r)
        v = _box_muller16(uniform24(mt, 16 * rows).reshape(rows, 16), mean, std, np.float32, compiled)
        out[16 * r:16 * (r + rows)] = v.reshape(-1).astype(out.dtype)
    if n % 16:
        v = _box_muller16(uniform24(mt, 16).reshape(1, 16), mean, std, np.float32, compiled)
        out[n - 16:] = v.reshape(-1).astype(out.dtype)
    return out


def standard_normals(gen, n: int) -> np.ndarray:
    """``n`` draws of ``normal_distribution<double>(0, 1)``, serially, with torch's cache of
    the second Box-Muller value (``gen.normal_cache``)."""
    out = np.empty(n, np.float64)
    i = 0
    if n and gen.normal_cache is not None:
        out[0], gen.normal_cache = gen.normal_cache, None
        i = 1
    m = n - i
    if m:
        pairs = (m + 1) // 2
        u = uniform53(gen.mt, 2 * pairs)
        r = np.sqrt(-2.0 * np.log1p(-u[1::2]))
        theta = 2.0 * np.pi * u[0::2]
        both = np.stack([r * np.cos(theta), r * np.sin(theta)], 1).reshape(-1)
        out[i:] = both[:m]
        if m % 2:
            gen.normal_cache = float(both[-1])
    return out


def normal(gen, n: int, mean: float, std: float, dtype, contiguous: bool = True, out=None) -> np.ndarray:
    """``n`` values of ``normal_(mean, std)`` for a tensor of ``dtype``, in visiting order,
    written into ``out`` (flat, ``dtype``) when given. A complex dtype draws ``2n`` values of
    its parts' dtype with ``std / sqrt(2)`` (torch's: ``E|z - mean|^2 = std^2``), interleaved."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = dtype.type(0).real.dtype
        return _complex_pairs(normal(gen, 2 * n, mean, std / math.sqrt(2.0), part, contiguous),
                              dtype, out)
    if n >= 16 and contiguous:
        return _normal_fill(gen, n, mean, std, _new_or(out, n, dtype))
    values = standard_normals(gen, n) * std + mean
    if out is None:
        return values
    out[...] = values.astype(np.float32).astype(dtype) if dtype.kind == "V" else values
    return out


def integers(gen, n: int, low: int, high: int) -> np.ndarray:
    """``random_(low, high)`` / ``randint``: int64 values in ``[low, high)``."""
    span = int(high) - int(low)
    raw = raw64(gen.mt, n) if span >= 1 << 32 else raw32(gen.mt, n)
    return (raw % np.uint64(span)).astype(np.int64) + np.int64(low)


def full_range(gen, n: int, dtype) -> np.ndarray:
    """``random_()`` with no range, ``uniform_int<T>``: int64 ``random64() % 2^63``; float64
    ``random64() % (2^53 + 1)``; float32/half/bfloat16 ``random() % (2^digits + 1)``; bool
    ``random() & 1``; other integers ``random() % (max + 1)``."""
    dtype = np.dtype(dtype)
    if dtype == np.int64:
        return (raw64(gen.mt, n) % np.uint64(1 << 63)).astype(np.int64)
    if dtype == np.float64:
        return (raw64(gen.mt, n) % np.uint64((1 << 53) + 1)).astype(np.float64)
    if dtype == np.bool_:
        return (raw32(gen.mt, n) & np.uint64(1)).astype(np.bool_)
    if dtype.kind in "fV":
        digits = 24 if dtype == np.float32 else 11 if dtype == np.float16 else 8
        return (raw32(gen.mt, n) % np.uint64((1 << digits) + 1)).astype(np.float32)
    return (raw32(gen.mt, n) % np.uint64(int(np.iinfo(dtype).max) + 1)).astype(dtype)


def permutation(gen, n: int) -> np.ndarray:
    """``randperm(n)`` (int64): torch's swap loop over ``random() % (n - i)``."""
    r = np.arange(n, dtype=np.int64)
    if n > 1:
        raw = raw32(gen.mt, n - 1)
        if n >= _KERNEL_FROM:
            from .. import kernels

            if kernels.enabled():
                from ..kernels import shuffle

                shuffle.shuffle(r, raw)  # the same swaps, compiled (0.3 s -> ms at n = 1e6)
                return r
        z = (raw % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
        _swap_loop(r, z)
    return r


def _swap_loop(r: np.ndarray, z: np.ndarray) -> None:
    for i, zi in enumerate(z.tolist()):  # sequential by nature (each swap sees the last)
        if zi:
            r[i], r[i + zi] = r[i + zi], r[i]


def bernoulli(gen, n: int, p: float) -> np.ndarray:
    """``bernoulli_(p)`` with a number ``p`` (and dropout's mask): ``uniform53 < p``."""
    return uniform53(gen.mt, n) < float(p)


def bernoulli_of(gen, probs: np.ndarray) -> np.ndarray:
    """``bernoulli(probs)`` element by element in C order: float64 probabilities compare a
    53-bit uniform, the others (float32, half, bfloat16) a 24-bit float32 one."""
    flat = np.ascontiguousarray(probs).reshape(-1)
    if flat.dtype == np.float64:
        return (uniform53(gen.mt, flat.size) < flat).reshape(probs.shape)
    return (uniform24(gen.mt, flat.size) < flat.astype(np.float32)).reshape(probs.shape)


def exponential(gen, n: int, lambd: float) -> np.ndarray:
    return -1.0 / float(lambd) * np.log1p(-uniform53(gen.mt, n))


def cauchy(gen, n: int, median: float, sigma: float) -> np.ndarray:
    return median + sigma * np.tan(np.pi * (uniform53(gen.mt, n) - 0.5))


def geometric(gen, n: int, p: float) -> np.ndarray:
    return np.ceil(np.log(uniform53(gen.mt, n)) / np.log1p(-float(p)))


def log_normal(gen, n: int, mean: float, std: float) -> np.ndarray:
    return np.exp(standard_normals(gen, n) * std + mean)


def multinomial(gen, weights: np.ndarray, total: np.ndarray, num_samples: int, replacement: bool) -> np.ndarray:
    """torch's CPU ``multinomial`` on rows of non-negative ``weights`` ((R, C), float32 or
    float64; ``total``: their row sums (R, 1), float64): int64 (R, num_samples).

    With replacement and more than one sample: each row's running sum (in double, stored in
    the weights' dtype) divided by the sum, the last bucket set to 1, then per sample a 53-bit
    uniform and the first bucket >= it. Otherwise torch's exponential race: ``q ~ Exp(1)`` per
    element (float64 draws cast to the weights' dtype), keys ``w / q``, the ``num_samples``
    largest (argmax for one)."""
    rows, cats = weights.shape
    dt = weights.dtype
    if replacement and num_samples > 1:
        cum = np.cumsum(weights.astype(np.float64), axis=1).astype(dt)  # (R, C)
        cum = (cum.astype(np.float64) / total).astype(dt)
        cum[:, -1] = 1
        idx = np.empty((rows, num_samples), np.int64)
        for r in range(rows):
            idx[r] = np.searchsorted(cum[r].astype(np.float64), uniform53(gen.mt, num_samples), side="left")
        return idx
    q = exponential(gen, weights.size, 1.0).astype(dt).reshape(rows, cats)
    with np.errstate(divide="ignore", invalid="ignore"):
        keys = weights / q  # (R, C)
    if num_samples == 1:
        return np.argmax(keys, axis=1)[:, None].astype(np.int64)
    return np.argsort(-keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)


# ----------------------------------------------------------------------------- rejection samplers
class Serial:
    """torch's draws one at a time, for its per-element rejection samplers (gamma, poisson,
    binomial). The twister's outputs are read ahead in blocks; :meth:`close` rewinds it to
    just after the outputs used, so the stream continues where torch's would."""

    def __init__(self, gen, ahead: int = 1024):
        self.gen, self.mt = gen, gen.mt
        self.start = self.mt.state
        self.ahead, self.used = ahead, 0
        self.buf, self.pos = self.mt.random_raw(ahead).tolist(), 0

    def _raw(self) -> int:
        if self.pos == len(self.buf):
            self.buf, self.pos = self.mt.random_raw(self.ahead).tolist(), 0
        self.pos += 1
        self.used += 1
        return self.buf[self.pos - 1]

    def uniform(self) -> float:
        """``uniform_real_distribution<double>(0, 1)``."""
        hi = self._raw()
        return (((hi << 32) | self._raw()) & ((1 << 53) - 1)) * 2.0**-53

    def normal(self) -> float:
        """``normal_distribution<double>(0, 1)``, sharing the generator's cached value."""
        cached = self.gen.normal_cache
        if cached is not None:
            self.gen.normal_cache = None
            return cached
        u1, u2 = self.uniform(), self.uniform()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.gen.normal_cache = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self) -> None:
        self.mt.state = self.start
        if self.used:
            self.mt.random_raw(self.used)


def _f32(x: float) -> float:
    return float(np.float32(x))


_THIRD_F, _C0331_F = float(np.float32(1.0 / 3.0)), float(np.float32(0.0331))


def gamma_one(s: Serial, alpha: float, single: bool) -> float:
    """``sample_gamma`` (Marsaglia and Tsang, with torch's boost for alpha < 1); ``single``:
    the tensor is float32, whose ``alpha`` arithmetic torch does in float."""
    rnd = _f32 if single else float
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= (1.0 - s.uniform()) ** rnd(1.0 / alpha)
        alpha = rnd(alpha + 1.0)
    d = rnd(alpha - _THIRD_F)  # torch writes 1.0f / 3.0f and 0.0331f: float constants
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = s.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - s.uniform()
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx or math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def standard_gamma(gen, alphas: np.ndarray) -> np.ndarray:
    """``torch._standard_gamma`` on the CPU: one ``sample_gamma`` per element in C order,
    clamped below at the dtype's smallest normal number; in ``alphas``' dtype."""
    dt = alphas.dtype if alphas.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    flat = np.ascontiguousarray(alphas, dtype=np.float64).reshape(-1)
    s = Serial(gen)
    try:
        out = np.array([gamma_one(s, a, dt == np.float32) for a in flat.tolist()], dtype=np.float64)
    finally:
        s.close()
    out = out.astype(dt)
    return np.maximum(out, np.finfo(dt).tiny).reshape(alphas.shape)


def dirichlet(gen, alphas: np.ndarray) -> np.ndarray:
    """``torch._sample_dirichlet`` on the CPU: double gammas (clamped at double's smallest
    normal), normalised over the last dim, clamped to ``[tiny, nextafter(1, 0)]`` of the dtype."""
    dt = alphas.dtype if alphas.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    flat = np.ascontiguousarray(alphas, dtype=np.float64).reshape(-1)
    s = Serial(gen)
    try:
        g = np.array([gamma_one(s, a, False) for a in flat.tolist()], dtype=np.float64)
    finally:
        s.close()
    g = np.maximum(g, np.finfo(np.float64).tiny).reshape(alphas.shape)
    x = (g / g.sum(-1, keepdims=True)).astype(dt)
    return np.clip(x, np.finfo(dt).tiny, np.nextafter(dt.type(1), dt.type(0)))


def poisson_one(s: Serial, lam: float) -> int:
    """``sample_poisson``: Hoermann's transformed rejection for ``lambda >= 10``, else products
    of uniforms."""
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = s.uniform() - 0.5
            v = s.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - math.lgamma(k + 1):
                return k
    if lam == 0:
        return 0
    enlam, x, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= s.uniform()
        if prod > enlam:
            x += 1
        else:
            return x


def poisson(gen, rates: np.ndarray) -> np.ndarray:
    """``torch.poisson`` on the CPU: one ``sample_poisson`` per element in C order (float64)."""
    flat = np.ascontiguousarray(rates, dtype=np.float64).reshape(-1)
    s = Serial(gen)
    try:
        out = np.array([poisson_one(s, r) for r in flat.tolist()], dtype=np.float64)
    finally:
        s.close()
    return out.reshape(rates.shape)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k < 10:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(s: Serial, count: float, prob: float) -> float:
    logprob, geom_sum, num_geom = math.log1p(-prob), 0.0, 0.0
    while True:
        geom_sum += math.ceil(math.log(s.uniform()) / logprob)
        if geom_sum > count:
            return num_geom
        num_geom += 1


def _btrs(s: Serial, count: float, prob: float, rnd) -> float:
    """Hoermann's transformed rejection (BTRS), as torch's ``btrs``."""
    stddev = math.sqrt(rnd(rnd(count * prob) * rnd(1 - prob)))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = rnd(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = rnd(prob / rnd(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(rnd((count + 1) * prob))
    while True:
        u = s.uniform() - 0.5
        v = s.uniform()
        us = 0.5 - abs(u)
        k = math.floor((2 * a / us + b) * u + c)
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return float(k)
        v = math.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * math.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        if v <= upper:
            return float(k)


def binomial_one(s: Serial, count: float, prob: float, single: bool) -> float:
    """``sample_binomial``: inversion for small means, BTRS otherwise (on the smaller of
    ``prob`` and ``1 - prob``)."""
    rnd = _f32 if single else float
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        return _btrs(s, count, prob, rnd) if rnd(count * prob) >= 10.0 else _binomial_inversion(s, count, prob)
    if prob > 0.5:
        q = rnd(1.0 - prob)
        return count - (_btrs(s, count, q, rnd) if rnd(count * q) >= 10.0 else _binomial_inversion(s, count, q))
    return math.nan


def binomial(gen, counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``torch.binomial`` on the CPU: one ``sample_binomial`` per element in C order."""
    single = probs.dtype != np.float64
    c = np.ascontiguousarray(counts, dtype=np.float64).reshape(-1)
    p = np.ascontiguousarray(probs, dtype=np.float64).reshape(-1)
    s = Serial(gen)
    try:
        out = np.array([binomial_one(s, a, b, single) for a, b in zip(c.tolist(), p.tolist())], dtype=np.float64)
    finally:
        s.close()
    return out.reshape(probs.shape)
