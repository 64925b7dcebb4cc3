"""torch's aten-level convolution and sampling primitives, as torch's top-level names:
``convolution`` (every conv and transposed conv in one signature), ``conv_tbc`` (time, batch,
channels; also ``F.conv_tbc``), ``grid_sampler`` / ``grid_sampler_2d`` / ``grid_sampler_3d``
(integer mode codes), ``affine_grid_generator`` and ``embedding_renorm_``.

Each runs the ``nn.functional`` op it stands for, so values and gradients are those ops'.
``grid_sampler``'s codes: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros,
1 border, 2 reflection (torch's enums). ``F.grid_sample`` has no 5-d input or bicubic mode yet, so
``grid_sampler_3d`` and code 2 raise its NotImplementedError.
"""

from __future__ import annotations

from ..autograd import no_grad
from ..ops import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    grid_sample,
)
from ..ops.index import renorm_rows_
from .functional_extra import affine_grid

__all__ = ["convolution", "conv_tbc", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
           "affine_grid_generator", "embedding_renorm_"]

_CONV = {3: conv1d, 4: conv2d, 5: conv3d}
_CONV_T = {3: conv_transpose1d, 4: conv_transpose2d, 5: conv_transpose3d}
_INTERP = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_adding, groups):
    """``torch.convolution``: ``conv{1,2,3}d`` (or ``conv_transpose{1,2,3}d`` when
    ``transposed``) chosen by the weight's dims. ``output_adding`` is the output padding
    (torch's Python binding spells the keyword so)."""
    output_padding = output_adding
    nd = weight.ndim
    if nd not in _CONV:
        raise RuntimeError(f"convolution: expected a 3-, 4- or 5-dim weight (1-, 2- or 3-d convolution), got "
                           f"{nd} dims")
    if transposed:
        return _CONV_T[nd](input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups,
                           tuple(dilation))
    if any(output_padding):
        raise RuntimeError(f"convolution: output_padding {list(output_padding)} is only for transposed "
                           "convolutions; pass zeros or transposed=True")
    return _CONV[nd](input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def conv_tbc(input, weight, bias, pad=0):
    """``torch.conv_tbc``: 1-d convolution of a ``(T, B, C_in)`` sequence with a
    ``(K, C_in, C_out)`` weight, zero-padded by ``pad`` on both ends; ``(T', B, C_out)``."""
    if input.ndim != 3 or weight.ndim != 3:
        raise RuntimeError(f"conv_tbc: expected a 3-dim input (time, batch, channels) and a 3-dim weight "
                           f"(kernel, in, out), got {input.ndim} and {weight.ndim} dims")
    if weight.shape[1] != input.shape[2]:
        raise RuntimeError(f"conv_tbc: input has {input.shape[2]} channels but the weight expects "
                           f"{weight.shape[1]} (weight is (kernel, in, out))")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


def _grid_sampler(dims):
    def fn(input, grid, interpolation_mode, padding_mode, align_corners):
        if dims is not None and input.ndim != dims + 2:
            raise RuntimeError(f"grid_sampler_{dims}d: expected a {dims + 2}-dim input, got {input.ndim} dims; "
                               "use grid_sampler to choose by the input's dims")
        if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
            raise RuntimeError(f"grid_sampler: interpolation_mode must be 0, 1 or 2 ({', '.join(_INTERP)}) and "
                               f"padding_mode 0, 1 or 2 ({', '.join(_PADDING)}); got {interpolation_mode}, "
                               f"{padding_mode}")
        return grid_sample(input, grid, _INTERP[interpolation_mode], _PADDING[padding_mode], align_corners)

    fn.__name__ = fn.__qualname__ = "grid_sampler" if dims is None else f"grid_sampler_{dims}d"
    fn.__doc__ = f"``torch.{fn.__name__}``: ``F.grid_sample`` with torch's integer mode codes."
    return fn


grid_sampler = _grid_sampler(None)
grid_sampler_2d = _grid_sampler(2)
grid_sampler_3d = _grid_sampler(3)


def affine_grid_generator(theta, size, align_corners):
    """``torch.affine_grid_generator``: ``F.affine_grid(theta, size, align_corners)``."""
    return affine_grid(theta, list(size), align_corners)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """``torch.embedding_renorm_``: scale the rows ``indices`` names down to ``max_norm`` where
    their ``norm_type``-norm is larger, in place (no autograd, as torch); returns ``input``."""
    with no_grad():
        renorm_rows_(input, indices.reshape(-1).array, max_norm, norm_type)
    return input
