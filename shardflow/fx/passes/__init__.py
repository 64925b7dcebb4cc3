"""``torch.fx.passes``: graph passes (``shape_prop.ShapeProp``)."""
