"""The profiler table's layout is torch's (``torch.autograd.profiler_util._build_table``):
the Name column is the longest key over every event (before ``row_limit``) plus 4, capped at
``max_name_column_width``; a key of ``max_name_column_width - 3`` characters or more is cut
there and ends in ``...``; the Input Shapes column is the longest shapes string plus 4, cut
without dots. The introyt autograd tutorial prints such a table (``aten::mul`` and
``aten::div``: a 13-wide Name column, 11 before)."""

import re

import torch

import shardflow as sf

LONG = "a_block_name_that_is_longer_than_the_default_name_column_width"


def _run(lib, profiler, by_shape=False):
    x = lib.ones(2, 3, requires_grad=True) + 1
    y = lib.ones(2, 3, requires_grad=True)
    z = lib.ones(2, 3, requires_grad=True)
    with profiler.profile(record_shapes=by_shape) as prof:
        for _ in range(3):
            z = (z / x) * y
        with profiler.record_function(LONG):
            z = z * y  # (``z * 2`` would add torch's scalar-wrapping ops)
    return prof.key_averages(group_by_input_shape=by_shape) if by_shape else prof.key_averages()


def _layout(table):
    """The lines with every timing cell masked to its width (times and shares are measured)."""
    masked = []
    for line in table.splitlines():
        masked.append(re.sub(r"[\d.]+(?:%|us|ms|s)(?=\s)", lambda m: "#" * len(m.group()), line))
    return masked


def _rows_by_name(lines):
    return {line.split()[0]: len(line) for line in lines if line.strip() and "%" in line}


def test_table_widths_and_cut_names_match_torch():
    ours = _run(sf, sf.autograd.profiler).table(sort_by="self_cpu_time_total")
    theirs = _run(torch, torch.autograd.profiler).table(sort_by="self_cpu_time_total")
    o, t = ours.splitlines(), theirs.splitlines()
    assert o[:3] == t[:3]  # the separator and the header, width for width
    assert o[0].startswith("-" * 55 + "  ")  # LONG is cut at the cap
    cut = LONG[:52] + "..."
    assert any(line.lstrip().startswith(cut + " ") for line in t)
    assert _rows_by_name(o) == _rows_by_name(t)
    assert {"aten::mul", "aten::div", cut} <= set(_rows_by_name(o))


def test_short_names_get_four_more_columns_than_the_longest():
    def table(lib, profiler):
        a, b = lib.ones(2, 3) + 1, lib.ones(2, 3) + 2
        with profiler.profile() as prof:
            for _ in range(2):
                a = (a / b) * b
        return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=1)

    ours, theirs = table(sf, sf.autograd.profiler), table(torch, torch.autograd.profiler)
    assert ours.splitlines()[:3] == theirs.splitlines()[:3]
    assert ours.splitlines()[1].startswith(" " * 9 + "Name  ")  # len("aten::mul") + 4 = 13


def test_input_shapes_column_matches_torch():
    ours = _run(sf, sf.autograd.profiler, by_shape=True).table(sort_by="count", row_limit=2)
    theirs = _run(torch, torch.autograd.profiler, by_shape=True).table(sort_by="count", row_limit=2)
    assert ours.splitlines()[:3] == theirs.splitlines()[:3]
    assert ours.splitlines()[1].endswith("    Input Shapes  ")  # len("[[2, 3], [2, 3]]") + 4 = 20
