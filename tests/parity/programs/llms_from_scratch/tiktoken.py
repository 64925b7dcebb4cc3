"""A tiny deterministic stand-in for ``tiktoken`` (not installed here, and its GPT-2 BPE
tables are a download; it must not become a dependency). It keeps tiktoken's interface as
"Build a Large Language Model (From Scratch)" uses it: ``get_encoding("gpt2")`` gives an
encoding with ``encode(text, allowed_special=...)``, ``decode(ids)``, ``n_vocab`` (50257,
GPT-2's) and ``eot_token`` (``<|endoftext|>`` is 50256, as in GPT-2).

Text is split into pieces with GPT-2's pre-tokenizer pattern (words with their leading
space, numbers, punctuation runs, whitespace), so a text has about as many tokens as with
GPT-2's BPE (the book's test-mode models have a context of 120). A one-byte piece is its
byte (ids 0-255); a longer piece gets ``256 + crc32(piece) % 50000`` and is remembered for
``decode`` (on a collision the first piece seen keeps the id). An id never produced by
``encode`` (a random model's generation) decodes to a made-up word ``" w<id>"``. The test
puts this module in ``sys.modules["tiktoken"]`` for both runs.
"""

import re
import zlib

ENDOFTEXT = "<|endoftext|>"
# GPT-2's pattern ("'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
# in the standard library's classes
_PIECES = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


class Encoding:
    """tiktoken.Encoding's ``encode``/``decode``/``n_vocab``/``eot_token``."""

    def __init__(self, name="gpt2"):
        self.name = name
        self.n_vocab = 50257
        self.eot_token = 50256
        self._pieces = {}  # id -> the first piece encoded to it

    def _piece_id(self, piece):
        data = piece.encode("utf-8")
        if len(data) == 1:
            return data[0]
        token = 256 + zlib.crc32(data) % (self.eot_token - 256)
        self._pieces.setdefault(token, piece)
        return token

    def encode(self, text, allowed_special=frozenset(), disallowed_special="all"):
        if allowed_special == "all":
            allowed_special = {ENDOFTEXT}
        ids = []
        for i, part in enumerate(text.split(ENDOFTEXT)):
            if i:
                if ENDOFTEXT not in allowed_special:
                    raise ValueError(f"Encountered text corresponding to disallowed special token {ENDOFTEXT!r}.")
                ids.append(self.eot_token)
            ids.extend(self._piece_id(p) for p in _PIECES.findall(part))
        return ids

    def decode(self, tokens):
        out, pending = [], bytearray()
        for t in tokens:
            t = int(t)
            if t < 256:
                pending.append(t)
                continue
            out.append(pending.decode("utf-8", errors="replace"))
            pending = bytearray()
            out.append(ENDOFTEXT if t == self.eot_token else self._pieces.get(t, f" w{t}"))
        out.append(pending.decode("utf-8", errors="replace"))
        return "".join(out)


_ENCODINGS = {}


def get_encoding(name):
    """The ``gpt2`` encoding (one per process, as tiktoken caches it: both runs of a test
    see the same pieces)."""
    if name != "gpt2":
        raise ValueError(f"the tiktoken stand-in has only the 'gpt2' encoding, not {name!r}")
    return _ENCODINGS.setdefault(name, Encoding(name))
