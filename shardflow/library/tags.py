"""``torch.Tag``: the tags an operator schema can carry (``core``, ``pointwise``,
``inplace_view`` ...), torch 2.13's members in its order, values 0, 1, ... as torch's.

shardflow's ops carry no tags; the enum exists for ``torch.library.define(..., tags=...)``
arguments and code that compares tags.
"""

from __future__ import annotations

import enum

__all__ = ["Tag"]

Tag = enum.Enum("Tag", [
    "core", "cudagraph_unsafe", "data_dependent_output", "dynamic_output_shape", "flexible_layout",
    "generated", "inplace", "inplace_view", "maybe_aliasing_or_mutating", "needs_contiguous_strides",
    "needs_exact_strides", "needs_fixed_stride_order", "nondeterministic_bitwise",
    "nondeterministic_seeded", "out", "out_variant", "pointwise", "pt2_compliant_tag", "reduction",
    "view_copy"], start=0, module=__name__)
