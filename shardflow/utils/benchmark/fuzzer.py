"""``Fuzzer``, ``FuzzedParameter``, ``ParameterAlias``, ``FuzzedTensor``: random benchmark
inputs, as ``torch.utils.benchmark``'s.

The parameters are drawn from a NumPy ``RandomState(seed)`` in torch's order (every parameter
of a candidate, candidates rejected until the constraints and every tensor's element/byte
limits hold, then per tensor one draw deciding contiguity and, if discontiguous, a
permutation), so a seed gives the same sizes, orders and steps as torch's fuzzer. The tensor
values come from ``shardflow.rand`` / ``randint(1, 127)`` after ``manual_seed`` with the
stream's first draw, as torch does (they are torch's values only where shardflow's
generator draws as torch's does). A discontiguous tensor is a permuted copy permuted back
(then sliced by its steps).

Deviation: torch 2.13's check of a custom distribution (``distribution={value: p}``) is
inverted (it refuses every normalised dict, so its ``op_fuzzers.binary.BinaryOpFuzzer``
cannot be built); shardflow refuses a dict whose probabilities do not sum to 1.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from ...backend import dtypes
from ...backend.random import manual_seed
from ...ops.creation import rand, randint

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named random value: ``loguniform`` / ``uniform`` in ``[minval, maxval]`` (integers
    when both bounds are), or a ``{value: probability}`` dict. ``strict``: one value per
    ``take`` (shared by every candidate)."""

    def __init__(self, name: str, minval=None, maxval=None, distribution=None, strict: bool = False) -> None:
        self._name, self._minval, self._maxval = name, minval, maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution} (expected one of "
                                     f"{', '.join(_DISTRIBUTIONS)} or a {{value: probability}} dict)")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError(f"Distribution is not normalized: the probabilities sum to "
                                 f"{sum(distribution.values()):g}, expected 1")
        if self._minval is not None or self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' and 'maxval' must be None")
        return distribution

    def sample(self, state: np.random.RandomState):
        if self._distribution == "loguniform":
            value = int(2 ** state.uniform(low=np.log2(self._minval), high=np.log2(self._maxval)))
            return min(max(value, self._minval), self._maxval)
        if self._distribution == "uniform":
            if isinstance(self._minval, int) and isinstance(self._maxval, int):
                return int(state.randint(low=self._minval, high=self._maxval + 1))
            return state.uniform(low=self._minval, high=self._maxval)
        index = state.choice(np.arange(len(self._distribution)), p=tuple(self._distribution.values()))
        return list(self._distribution)[index]


class ParameterAlias:
    """A parameter that takes another parameter's value (``ParameterAlias("k0")``)."""

    def __init__(self, alias_to) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def _dtype_size(dtype) -> int:
    return int(dtypes.as_dtype(dtype).itemsize)


def _prod(values, base=1) -> int:
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor whose ``size`` (and ``steps``) are parameter names or numbers (module
    docstring); ``min_elements`` / ``max_elements`` / ``max_allocation_bytes`` reject
    candidates; ``probability_contiguous`` is the chance it is laid out contiguously."""

    def __init__(self, name: str, size, steps=None, probability_contiguous: float = 0.5, min_elements=None,
                 max_elements=None, max_allocation_bytes=None, dim_parameter=None, roll_parameter=None,
                 dtype=None, cuda: bool = False, tensor_constructor=None) -> None:
        if roll_parameter is not None:
            raise NotImplementedError("FuzzedTensor(roll_parameter=...): torch's fuzzer ignores it too; "
                                      "leave it None")
        if cuda:
            raise NotImplementedError("FuzzedTensor(cuda=True): shardflow's fuzzer makes CPU tensors; "
                                      "move them with .to('cuda') in the benchmark's setup")
        self._name, self._size, self._steps = name, size, steps
        self._probability_contiguous = probability_contiguous
        self._min_elements, self._max_elements = min_elements, max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtypes.float32 if dtype is None else dtype
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        if dtype.is_floating_point or dtype.is_complex:
            return rand(size, dtype=dtype)
        return randint(1, 127, size, dtype=dtype)

    def _sizes(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size, steps = resolve(self._size), resolve(self._steps or ())
        return size, steps, tuple(s * st for s, st in zip(size, steps))

    def _make_tensor(self, params, state):
        size, steps, allocation = self._sizes(params)
        make = self._tensor_constructor or self.default_tensor_constructor
        raw = make(size=allocation, dtype=self._dtype, **params)
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(int(i) for i in order)).contiguous()
            raw = raw.permute(tuple(int(i) for i in np.argsort(order)))
        tensor = raw[tuple(slice(0, s * st, st) for s, st in zip(size, steps))]
        return tensor, {"numel": int(tensor.numel()), "order": order, "steps": steps,
                        "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}

    def satisfies_constraints(self, params) -> bool:
        size, _, allocation = self._sizes(params)
        elements = _prod(size)
        nbytes = _prod(allocation, base=_dtype_size(self._dtype))

        def above(left, right):
            return left is not None and right is not None and left > right

        return not (above(elements, self._max_elements) or above(self._min_elements, elements)
                    or above(nbytes, self._max_allocation_bytes))


class Fuzzer:
    """``take(n)`` yields ``(tensors, tensor_properties, params)`` n times (module docstring)."""

    def __init__(self, parameters, tensors, constraints=None, seed: int | None = None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = self._unpack(parameters, FuzzedParameter)
        self._tensors = self._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(itertools.chain.from_iterable([[v] if isinstance(v, cls) else v for v in values]))

    def take(self, n: int):
        state = np.random.RandomState(self._seed)
        manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state):
        strict: dict = {}
        for _ in range(1000):
            candidate = {}
            for p in self._parameters:
                if p.strict:
                    if p.name not in strict:
                        strict[p.name] = p.sample(state)
                    candidate[p.name] = strict[p.name]
                else:
                    candidate[p.name] = p.sample(state)
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) or not all(
                    t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters (1000 candidates rejected): "
                         "loosen the constraints or the tensors' element/byte limits")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        count = sum(isinstance(v, ParameterAlias) for v in params.values())
        while count:
            for k in list(params):
                if isinstance(params[k], ParameterAlias):
                    params[k] = params[params[k].alias_to]
            new = sum(isinstance(v, ParameterAlias) for v in params.values())
            if new == count:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            count = new
        return params
