"""``torch.nn.attention``'s path: ``sdpa_kernel`` and ``SDPBackend``.

PyTorch picks one of several scaled-dot-product-attention kernels (math, flash, memory
efficient, cuDNN) and ``sdpa_kernel(backends)`` restricts that choice for a block, by setting
the ``backends.cuda.enable_*_sdp`` switches (restored on exit). shardflow has one SDPA
implementation per device (``ops/attention.py``), so every backend gives the same results
(PyTorch's kernels agree up to rounding too); what the switches decide is whether there is a
kernel at all, as in PyTorch: on a CPU only the math and flash kernels exist, so
``sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)`` (or cuDNN, or overrideable) makes SDPA on CPU
tensors raise RuntimeError, as torch's does, and flash alone refuses ``dropout_p > 0``.
The argument is checked as PyTorch checks it.

``nn.attention.bias`` (causal biases) is a submodule of its own (``bias.py``).
"""

from __future__ import annotations

from contextlib import contextmanager

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel"]


SDPBackend = _cuda.SDPBackend  # one class, torch.backends.cuda.SDPBackend is torch.nn.attention.SDPBackend


@contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Accepts the backends PyTorch accepts (an ``SDPBackend`` or a list of them); no effect
    (module docstring)."""
    items = backends if isinstance(backends, list) else [backends]
    for b in items:
        if not isinstance(b, SDPBackend):
            raise AssertionError(
                "Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                f"got {type(b).__name__}"
            )
    switches = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
                SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}
    saved = dict(_cuda._sdp)
    _cuda._sdp.update({name: backend in items for backend, name in switches.items()})
    try:
        yield
    finally:
        _cuda._sdp.update(saved)
