"""``torch.nested``: nested (ragged) tensors, which shardflow does not build.

Each of torch 2.13's ``torch.nested`` functions exists and raises NotImplementedError that
names the alternative: pad the sequences into one dense tensor
(``nn.utils.rnn.pad_sequence``) with a mask, or pack them (``pack_padded_sequence``) for
recurrent layers. Never a silent dense result.
"""

from __future__ import annotations

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "narrow", "to_padded_tensor",
           "masked_select"]


def _refuse(name):
    def refused(*args, **kwargs):
        raise NotImplementedError(
            f"shardflow.nested.{name}: shardflow has no nested (jagged) tensors; expected dense tensors. "
            "Pad the sequences into one tensor with nn.utils.rnn.pad_sequence(seqs, batch_first=True) "
            "and carry a mask (or pack_padded_sequence for recurrent layers)")

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"``torch.nested.{name}``: refused (see the module docstring)."
    return refused


nested_tensor = _refuse("nested_tensor")
as_nested_tensor = _refuse("as_nested_tensor")
nested_tensor_from_jagged = _refuse("nested_tensor_from_jagged")
narrow = _refuse("narrow")
to_padded_tensor = _refuse("to_padded_tensor")
masked_select = _refuse("masked_select")
