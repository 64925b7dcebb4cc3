"""Orderings of complex tensors refused as torch refuses them (type and message): complex
numbers have no order, and NumPy's lexicographic one let shardflow's comparisons, max/min,
argmax, maximum, sort, topk, cummax, kthvalue and median return what torch never computes.
``==`` and ``!=`` stay defined."""

import numpy as np
import pytest
import torch

import shardflow as sf

Z = (np.arange(6).reshape(2, 3) + 1j * np.arange(6)[::-1].reshape(2, 3)).astype(np.complex64)

CASES = {
    "lt": (lambda L, z: z < z, NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    "le_scalar": (lambda L, z: z <= 1, NotImplementedError,
                  "\"le_cpu\" not implemented for 'ComplexFloat'"),
    "gt_real_vs_cdouble": (lambda L, z: L.ones(3) > z.to(L.cdouble), NotImplementedError,
                           "\"gt_cpu\" not implemented for 'ComplexDouble'"),
    "ge_python_complex": (lambda L, z: L.ones(2) >= 1j, NotImplementedError,
                          "\"ge_cpu\" not implemented for 'ComplexFloat'"),
    "max_all": (lambda L, z: z.max(), NotImplementedError,
                "\"max_all\" not implemented for 'ComplexFloat'"),
    "min_dim": (lambda L, z: z.min(1), RuntimeError, "min(): does not support complex input"),
    "max_other": (lambda L, z: L.max(z, z), RuntimeError,
                  "maximum not implemented for complex tensors."),
    "fmin": (lambda L, z: L.fmin(z, z), RuntimeError, "fmin not implemented for complex tensors."),
    "amax": (lambda L, z: z.amax(0), NotImplementedError,
             "\"max_values_cpu\" not implemented for 'ComplexFloat'"),
    "aminmax": (lambda L, z: z.aminmax(), NotImplementedError,
                "\"aminmax_cpu\" not implemented for 'ComplexFloat'"),
    "argmax": (lambda L, z: z.argmax(), RuntimeError, "argmax(): does not support complex input"),
    "sort": (lambda L, z: z.sort(), RuntimeError, " Sort does not support complex dtypes on CPU"),
    "argsort": (lambda L, z: z.argsort(stable=True), RuntimeError,
                " Sort does not support complex dtypes on CPU"),
    "topk": (lambda L, z: z.topk(1), RuntimeError, " topk does not support complex dtypes on CPU"),
    "cummin": (lambda L, z: z.cummin(0), NotImplementedError,
               "\"cummin_cpu\" not implemented for 'ComplexFloat'"),
    "kthvalue": (lambda L, z: z.kthvalue(1), NotImplementedError,
                 "\"kthvalue_cpu\" not implemented for 'ComplexFloat'"),
    "median": (lambda L, z: z.median(), NotImplementedError,
               "\"median_cpu\" not implemented for 'ComplexFloat'"),
    "median_dim": (lambda L, z: z.median(0), NotImplementedError,
                   "\"median_out\" not implemented for 'ComplexFloat'"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_ordering_refused_like_torch(name):
    f, exc, msg = CASES[name]
    for L in (torch, sf):
        with pytest.raises(exc) as info:
            f(L, L.tensor(Z))
        assert str(info.value) == msg, (L.__name__, str(info.value))


def test_complex_equality_still_defined():
    for L in (torch, sf):
        z = L.tensor(Z)
        np.testing.assert_array_equal((z == z.conj()).numpy(), Z == Z.conj())
        np.testing.assert_array_equal((z != 1 + 5j).numpy(), Z != 1 + 5j)
