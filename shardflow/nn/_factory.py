"""``torch.nn.factory_kwargs(kwargs)``: the ``device`` / ``dtype`` / ``memory_format`` a module
constructor's ``**kwargs`` carries, as one dict for factory calls (``torch.empty(n,
**factory_kwargs)``), with torch's checks: an unknown key, or a key given both directly and in
the ``factory_kwargs`` entry, raises ``TypeError``."""

from __future__ import annotations

__all__ = ["factory_kwargs"]


def factory_kwargs(kwargs):
    """The canonical factory keyword arguments in ``kwargs`` (None: ``{}``)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
