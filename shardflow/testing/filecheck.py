"""``torch.testing.FileCheck``: LLVM FileCheck-style matching of TorchScript/FX graph text
(``FileCheck().check("aten::mm").run(graph)``), used by compiler tests to look for ops in an
IR. shardflow has no TorchScript IR, so the class exists and refuses at construction with
what to use instead, rather than matching a text it could not produce the way torch does."""

from __future__ import annotations

__all__ = ["FileCheck"]


class FileCheck:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "torch.testing.FileCheck matches TorchScript graph text, which shardflow does not "
            "produce; look for ops in str(shardflow.fx.symbolic_trace(module).graph) with plain "
            "string checks (`assert 'matmul' in text`) instead")
