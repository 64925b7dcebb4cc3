"""``torch.onnx``: importable, so model code that asks ``is_in_onnx_export()`` runs; shardflow
cannot export ONNX graphs, and ``export`` says what to do instead."""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError"]


class OnnxExporterError(RuntimeError):
    pass


def is_in_onnx_export() -> bool:
    """Always False: shardflow never traces a model for ONNX."""
    return False


def export(model, args=(), f=None, *unused_args, **unused_kwargs):
    """Not available: raises NotImplementedError with the route through PyTorch."""
    raise NotImplementedError(
        "shardflow cannot export ONNX (shardflow.onnx.export is a placeholder so that imports "
        "work). To get an ONNX file: save the weights with "
        "shardflow.save(model.state_dict(), 'model.safetensors'); in PyTorch, build the same "
        "model class, load them with model.load_state_dict(safetensors.torch.load_file("
        "'model.safetensors')), and call torch.onnx.export(model, args, 'model.onnx') there."
    )
