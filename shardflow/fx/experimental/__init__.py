"""``torch.fx.experimental``: ``optimization.fuse`` (conv / linear + batch-norm folding of an
eval-mode model through a symbolic trace). torch's other experimental modules (symbolic
shapes, proxy tensors, ...) are not built."""
