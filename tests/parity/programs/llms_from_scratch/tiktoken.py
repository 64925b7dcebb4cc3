"""A tiny deterministic stand-in for ``tiktoken`` (not installed here, and its GPT-2 BPE
tables are a download; it must not become a dependency). It keeps tiktoken's interface as
"Build a Large Language Model (From Scratch)" uses it: ``get_encoding("gpt2")`` gives an
encoding with ``encode(text, allowed_special=...)``, ``decode(ids)`` and ``n_vocab`` (50257,
GPT-2's), ``<|endoftext|>`` is id 50256 as in GPT-2. Text is encoded byte by byte (UTF-8:
ids 0-255); every id decodes, those above 255 to a made-up word ``" w<id>"``, so that a
randomly initialised model's generations print. The test puts this module in
``sys.modules["tiktoken"]`` for both runs.
"""

ENDOFTEXT = "<|endoftext|>"


class Encoding:
    """tiktoken.Encoding's ``encode``/``decode``/``n_vocab``/``eot_token``."""

    def __init__(self, name="gpt2"):
        self.name = name
        self.n_vocab = 50257
        self.eot_token = 50256

    def encode(self, text, allowed_special=frozenset(), disallowed_special="all"):
        if allowed_special == "all":
            allowed_special = {ENDOFTEXT}
        ids = []
        for i, part in enumerate(text.split(ENDOFTEXT)):
            if i:
                if ENDOFTEXT not in allowed_special:
                    raise ValueError(f"Encountered text corresponding to disallowed special token {ENDOFTEXT!r}.")
                ids.append(self.eot_token)
            ids.extend(part.encode("utf-8"))
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
            out.append(ENDOFTEXT if t == self.eot_token else f" w{t}")
        out.append(pending.decode("utf-8", errors="replace"))
        return "".join(out)


def get_encoding(name):
    if name != "gpt2":
        raise ValueError(f"the tiktoken stand-in has only the 'gpt2' encoding, not {name!r}")
    return Encoding(name)
