"""The attribute names under which a node keeps what its backward reads of its inputs and its
output (``self.x``; ``self.a``, ``self.b``, ``self.c``; ``self.y``): one convention, read by
``Function.saved_input`` (function.py), the saved-tensor hooks (saved_hooks.py) and torch's
``grad_fn._saved_*`` attributes (saved_attributes.py)."""

SAVED_INPUT_NAMES = (("x", "a"), ("b",), ("c",))  # input index -> the names that may hold it
SAVED_OUTPUT_NAME = "y"
