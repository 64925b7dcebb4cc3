"""``MixedPrecisionPolicy``: PyTorch FSDP2's mixed-precision settings for ``fully_shard``.

A frozen dataclass with PyTorch's fields and defaults (``param_dtype``, ``reduce_dtype``,
``output_dtype`` = ``None``: no cast; ``cast_forward_inputs=True``). ``fully_shard`` takes the
default policy, which asks for no cast (programs pass ``MixedPrecisionPolicy()`` or build one
conditionally); a policy that asks for a cast is refused by ``fully_shard``, naming the fields,
because shardflow's FSDP computes and reduces in the parameters' own dtype.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True

    def casts(self) -> dict:
        """The fields that ask for a cast (empty for the default policy)."""
        return {k: v for k, v in (("param_dtype", self.param_dtype), ("reduce_dtype", self.reduce_dtype),
                                  ("output_dtype", self.output_dtype)) if v is not None}
