"""Quantized modules: ``static`` (``ao.nn.quantized``), ``dynamic`` (``ao.nn.quantized.dynamic``),
``qat`` (``ao.nn.qat``), ``packed`` (int8 weight storage)."""

from . import dynamic, functional_modules, intrinsic, qat, static
