"""``torch.ao.quantization.fuser_method_mappings``: the functions that fuse a list of modules
(``fuse_conv_bn``, ``fuse_conv_bn_relu``, ``fuse_linear_bn``, ``fuse_convtranspose_bn``) and
``get_fuser_method(op_list)``, which finds the one for a tuple of module types; custom
``fuse_modules(..., fuser_func=...)`` code and FX-style fusion helpers call them.

As torch's, for post-training fusion (``is_qat=False``): batch norm folded into the preceding
convolution / linear / transposed convolution (``nn.utils.fusion``), then wrapped with its ReLU
in the fused module (``ConvReLU2d``, ``LinearReLU``); the checks and errors are torch's (modes
must match; a pattern without a fuser raises ``AssertionError("did not find fuser method
for: ...")``). Not built, with a NotImplementedError naming the missing module: the QAT forms
(``is_qat=True``: ``ConvBn*d``, ``ConvBnReLU*d``, ``LinearBn1d``) and the fused modules
shardflow lacks (``ConvReLU1d/3d``, ``BNReLU2d/3d``); ``get_fuser_method_new`` (FX patterns with
``MatchAllNode``) is not here.
"""

from __future__ import annotations

from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from ...quant.modules.intrinsic import ConvReLU2d, LinearReLU

__all__ = ["fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_convtranspose_bn", "get_fuser_method"]


def _not_built(what: str):
    raise NotImplementedError(f"{what} is not built in shardflow (post-training fusion, is_qat=False, of "
                              "Conv2d/Linear with BatchNorm and ReLU is); fuse in eval mode, or keep the modules apart")


def _same_mode(name: str, *mods) -> None:
    if len({m.training for m in mods}) != 1:
        raise AssertionError(f"{name} and BN both must be in the same mode (train or eval).")


def fuse_conv_bn(is_qat, conv, bn):
    """Conv with the eval-mode batch norm folded into it (``is_qat=True``: not built)."""
    _same_mode("Conv", conv, bn)
    if is_qat:
        _not_built(f"QAT fusion of {type(conv).__name__} + {type(bn).__name__} (torch's nni.ConvBn*d)")
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """``ConvReLU2d`` of the conv with the batch norm folded in (``is_qat=True``: not built)."""
    if not (conv.training == bn.training == relu.training):
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        _not_built(f"QAT fusion of {type(conv).__name__} + BatchNorm + ReLU (torch's nni.ConvBnReLU*d)")
    if type(conv) is not nn.Conv2d:
        if type(conv) in (nn.Conv1d, nn.Conv3d):
            _not_built(f"nni.ConvReLU{type(conv).__name__[-2:]} (fusing {type(conv).__name__} + BatchNorm + ReLU)")
        raise NotImplementedError(f"Cannot fuse eval modules: {(conv, bn, relu)}")
    return ConvReLU2d(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    """Linear with the eval-mode ``BatchNorm1d`` folded into it (``is_qat=True``: not built)."""
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if is_qat:
        _not_built("QAT fusion of Linear + BatchNorm1d (torch's nni.LinearBn1d)")
    return fuse_linear_bn_eval(linear, bn)


def fuse_convtranspose_bn(is_qat, convt, bn):
    """Transposed conv with the eval-mode batch norm folded into it (QAT: torch's error)."""
    if convt.training != bn.training:
        raise AssertionError("ConvTranspose and BN both must be in the same mode (train or eval).")
    if is_qat:
        raise Exception("Fusing ConvTranspose+BatchNorm not yet supported in QAT.")  # noqa: TRY002 - torch's
    return fuse_conv_bn_eval(convt, bn, transpose=True)


def _sequential_wrapper2(fused_class):
    """A fuser ignoring ``is_qat`` that wraps two modules in ``fused_class``."""

    def fuser_method(is_qat, m1, m2):
        return fused_class(m1, m2)

    return fuser_method


def _missing(name: str):
    def fuser_method(is_qat, *mods):
        _not_built(f"nni.{name} (fusing {' + '.join(type(m).__name__ for m in mods)})")

    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (nn.Conv1d, nn.BatchNorm1d): fuse_conv_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv3d, nn.BatchNorm3d): fuse_conv_bn,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv1d, nn.ReLU): _missing("ConvReLU1d"),
    (nn.Conv2d, nn.ReLU): _sequential_wrapper2(ConvReLU2d),
    (nn.Conv3d, nn.ReLU): _missing("ConvReLU3d"),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _sequential_wrapper2(LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _missing("BNReLU2d"),
    (nn.BatchNorm3d, nn.ReLU): _missing("BNReLU3d"),
    (nn.ConvTranspose1d, nn.BatchNorm1d): fuse_convtranspose_bn,
    (nn.ConvTranspose2d, nn.BatchNorm2d): fuse_convtranspose_bn,
    (nn.ConvTranspose3d, nn.BatchNorm3d): fuse_convtranspose_bn,
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The fuser for ``op_list`` (a tuple of module types); AssertionError if there is none."""
    mapping = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    fuser_method = mapping.get(op_list, None)
    if fuser_method is None:
        raise AssertionError(f"did not find fuser method for: {op_list} ")
    return fuser_method
