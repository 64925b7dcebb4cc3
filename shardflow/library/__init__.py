"""``torch.library``: Python custom operators (layer L4, over ``autograd`` and ``ops``).

| file | what |
|---|---|
| ``schema.py`` | schema strings: ``FunctionSchema`` (parse, bind a call), ``infer_schema`` |
| ``operator.py`` | ``OpDef`` (kernels, fake kernel, autograd formula; how a call dispatches), ``OpOverload``, ``OpOverloadPacket`` |
| ``autograd_kernel.py`` | the generated ``autograd.Function`` of ``register_autograd`` |
| ``custom_op.py`` | ``custom_op`` and ``CustomOpDef`` |
| ``library.py`` | ``Library`` (DEF / FRAGMENT / IMPL), ``define``, ``impl``, ``register_*``, ``get_ctx`` |
| ``opcheck.py`` | ``opcheck`` |

Operators are reached as ``torch.ops.<ns>.<name>`` (``shardflow/ops/_op_namespace.py``).
Not built: ``triton_op`` / ``wrap_triton`` (no Triton), ``register_torch_dispatch``,
``register_autocast`` (refused with NotImplementedError).
"""

from .custom_op import CustomOpDef, custom_op
from .library import (
    Library,
    define,
    fallthrough_kernel,
    get_ctx,
    impl,
    impl_abstract,
    register_autograd,
    register_fake,
    register_kernel,
    register_vmap,
)
from .opcheck import OpCheckError, opcheck
from .operator import OpOverload, OpOverloadPacket
from .schema import infer_schema

__all__ = ["CustomOpDef", "Library", "OpOverload", "OpOverloadPacket", "custom_op", "define", "fallthrough_kernel",
           "get_ctx", "impl", "impl_abstract", "infer_schema", "opcheck", "register_autocast",
           "register_autograd", "register_fake", "register_kernel", "register_torch_dispatch",
           "register_vmap", "triton_op", "wrap_triton", "OpCheckError"]


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Refused: autocast here casts shardflow's own ops only."""
    raise NotImplementedError(
        "torch.library.register_autocast: autocast casts shardflow's own ops only; cast the inputs "
        f"to {cast_inputs} inside the operator instead")


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """Refused: no ``__torch_dispatch__`` in shardflow."""
    raise NotImplementedError("torch.library.register_torch_dispatch: shardflow has no __torch_dispatch__ "
                              "modes; register a kernel (register_kernel) instead")


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """Refused: shardflow has no Triton kernels (use ``custom_op``)."""
    raise NotImplementedError(f"torch.library.triton_op({name!r}): shardflow has no Triton; define the "
                              "operator with torch.library.custom_op and a Python/CuPy kernel")


def wrap_triton(triton_kernel, /):
    """Refused: shardflow has no Triton kernels."""
    raise NotImplementedError("torch.library.wrap_triton: shardflow has no Triton")
