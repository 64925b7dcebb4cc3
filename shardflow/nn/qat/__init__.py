"""``torch.nn.qat``: legacy path of ``torch.ao.nn.qat`` (fake-quant training modules; re-exports)."""

from ...ao.nn.qat import *
