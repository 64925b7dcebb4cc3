"""The order in which torch's CPU ``sort(stable=False)`` leaves equal elements.

torch sorts a CPU slice with ``std::sort`` over (value, index) pairs (ATen's
``SortingKernel.cpp``; ``std::stable_sort`` only for ``stable=True``), and its wheels are
built against GCC's libstdc++, whose ``std::sort`` is an introsort: median-of-three
quicksort down to slices of 16, a heapsort past ``2 * floor(log2(n))`` levels, then one
insertion sort. Slices of at most 16 elements are insertion-sorted only, which is stable;
longer ones with equal elements come out in an order that only that algorithm gives (the
sparse mixture-of-experts dispatcher's ``torch.nonzero(gates).sort(0)`` prints it).

:func:`std_sort_order` replays that algorithm on integer keys (each element's rank among
the slice's distinct values; NaNs share the largest rank, as torch's comparator treats them
as equal and greatest). Its result depends on comparisons only, so the ranks give what the
values give. It runs in Python and is used only for a slice longer than 16 that has equal
elements (``ops/sort.py``): every other sort is NumPy's stable argsort, the same answer.
"""

from __future__ import annotations

THRESHOLD = 16  # libstdc++'s _S_threshold


def std_sort_order(keys: list) -> list:
    """The positions ``0..n-1`` in the order libstdc++'s ``std::sort`` leaves them when
    comparing ``keys[i] < keys[j]``."""
    n = len(keys)
    v = list(range(n))
    if n < 2:
        return v
    _introsort_loop(v, keys, 0, n, 2 * (n.bit_length() - 1))
    _final_insertion_sort(v, keys, 0, n)
    return v


def _introsort_loop(v, k, first, last, depth):
    while last - first > THRESHOLD:
        if depth == 0:
            _heap_sort(v, k, first, last)
            return
        depth -= 1
        cut = _partition_pivot(v, k, first, last)
        _introsort_loop(v, k, cut, last, depth)
        last = cut


def _partition_pivot(v, k, first, last):
    mid = first + (last - first) // 2
    # __move_median_to_first(first, first + 1, mid, last - 1)
    a, b, c = first + 1, mid, last - 1
    ka, kb, kc = k[v[a]], k[v[b]], k[v[c]]
    if ka < kb:
        m = b if kb < kc else (c if ka < kc else a)
    else:
        m = a if ka < kc else (c if kb < kc else b)
    v[first], v[m] = v[m], v[first]
    # __unguarded_partition(first + 1, last, pivot=first)
    pivot = k[v[first]]
    lo, hi = first + 1, last
    while True:
        while k[v[lo]] < pivot:
            lo += 1
        hi -= 1
        while pivot < k[v[hi]]:
            hi -= 1
        if not lo < hi:
            return lo
        v[lo], v[hi] = v[hi], v[lo]
        lo += 1


def _final_insertion_sort(v, k, first, last):
    if last - first > THRESHOLD:
        _insertion_sort(v, k, first, first + THRESHOLD)
        for i in range(first + THRESHOLD, last):
            _linear_insert(v, k, i)
    else:
        _insertion_sort(v, k, first, last)


def _insertion_sort(v, k, first, last):
    for i in range(first + 1, last):
        x = v[i]
        if k[x] < k[v[first]]:
            v[first + 1:i + 1] = v[first:i]
            v[first] = x
        else:
            _linear_insert(v, k, i)


def _linear_insert(v, k, i):
    x = v[i]
    kx = k[x]
    j = i - 1
    while kx < k[v[j]]:
        v[j + 1] = v[j]
        j -= 1
    v[j + 1] = x


def _heap_sort(v, k, first, last):
    """``std::__partial_sort(first, last, last)``: ``__make_heap`` then ``__sort_heap``."""
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(v, k, first, parent, n, v[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        value = v[last]
        v[last] = v[first]
        _adjust_heap(v, k, first, 0, last - first, value)


def _adjust_heap(v, k, first, hole, n, value):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if k[v[first + child]] < k[v[first + child - 1]]:
            child -= 1
        v[first + hole] = v[first + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole] = v[first + child - 1]
        hole = child - 1
    # __push_heap
    parent = (hole - 1) // 2
    kv = k[value]
    while hole > top and k[v[first + parent]] < kv:
        v[first + hole] = v[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole] = value
