"""A stand-in for gpt-fast's ``tokenizer`` module (its SentencePiece / tiktoken wrappers need
model files): ``get_tokenizer(path, model_name)`` gives a byte-level tokenizer over 256 ids
(id 1 is BOS, 2 EOS; ``decode`` writes each id as a printable character or ``<id>``)."""

import types


class _Bytes:
    def encode(self, text):
        return list(text.encode())

    def decode(self, ids):
        return "".join(chr(i) if 32 <= i < 127 else f"<{i}>" for i in ids)

    def bos_id(self):
        return 1

    def eos_id(self):
        return 2


def tokenizer_module():
    module = types.ModuleType("tokenizer")
    module.get_tokenizer = lambda tokenizer_model_path, model_name: _Bytes()
    return module
