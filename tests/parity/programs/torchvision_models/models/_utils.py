# ruff: noqa  (torchvision's code, its own style kept)
# From pytorch/vision torchvision/models/_utils.py (main): `_make_divisible` only, copied as
# written; the weights machinery of that file (`_ovewrite_named_param`,
# `handle_legacy_interface`, IntermediateLayerGetter) is left out. The function is the one
# commit 9173b13b7ed3f9cc2426fe84aa15b47969a69828's mobilenetv2.py carries inline.
# BSD 3-Clause License, Copyright (c) Soumith Chintala 2016.
from typing import Optional


def _make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
    """
    This function is taken from the original tf repo.
    It ensures that all layers have a channel number that is divisible by 8
    It can be seen here:
    https://github.com/tensorflow/models/blob/master/research/slim/nets/mobilenet/mobilenet.py
    """
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    # Make sure that round down does not go down by more than 10%.
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v
