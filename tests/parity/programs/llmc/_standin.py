"""Stand-ins for llm.c's inputs (no download): a ``tiktoken`` module whose "gpt2" encoding
has GPT-2's 50257 ids (each decoding to ``t<id>``, the end-of-text token 50256 to
``<eot>``) and token shards in llm.c's .bin format (a 256-int32 header: magic 20240520,
version 1, the token count; then uint16 tokens)."""

import types

import numpy as np


class _Encoding:
    max_token_value = 50256
    eot_token = 50256

    def decode_bytes(self, ids):
        return b"".join(b"<eot>" if i == self.eot_token else b"t%d" % i for i in ids)

    def decode(self, ids):
        return self.decode_bytes(ids).decode()


def tiktoken_module():
    module = types.ModuleType("tiktoken")
    module.get_encoding = lambda name: _Encoding()
    return module


def token_shard(n: int, seed: int) -> bytes:
    """The bytes of a .bin shard of ``n`` tokens drawn uniformly from the vocabulary."""
    tokens = np.random.default_rng(seed).integers(0, 50257, n).astype(np.uint16)
    header = np.zeros(256, np.int32)
    header[:3] = 20240520, 1, n
    return header.tobytes() + tokens.tobytes()
