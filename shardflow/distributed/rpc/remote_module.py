"""``RemoteModule`` (``torch.distributed.nn.RemoteModule``): an ``nn.Module`` created on a
remote worker and called through RPC.

``RemoteModule(remote_device, module_cls, args, kwargs)`` runs ``module_cls(*args,
**kwargs)`` on the worker named by ``remote_device`` (``"worker1/cpu"``, ``"rank:1/cpu"``,
or a bare worker name) with ``rpc.remote`` and keeps the RRef (``get_module_rref()``).
``forward(*args)`` is an ``rpc_sync`` of the module's forward on its owner,
``forward_async`` the ``rpc_async``; inside a distributed autograd context both record the
RPC, so gradients reach the remote parameters. ``remote_parameters()`` gives RRefs to them
(for ``DistributedOptimizer``). ``train()`` / ``eval()`` run on the owner; the methods that
would need the parameters here (``parameters``, ``to``, ``state_dict``, ...) raise
PyTorch's "not supported for RemoteModule". A RemoteModule can be sent in RPC arguments
(its module RRef is forked).
"""

from __future__ import annotations

from ...backend.device import device as Device
from ...nn.module import Module
from . import api
from .rref import RRef

__all__ = ["RemoteModule"]


def _create_module(module_cls, args, kwargs, device):
    module = module_cls(*args, **kwargs)
    if not isinstance(module, Module):
        raise ValueError(
            "Expect `module_cls(*args, **kwargs)` returns an instance of <class nn.Module>, "
            f"but it returns an instance of {type(module)}.")
    module.to(device)
    return module


def _param_rrefs(module_rref, recurse):
    return [RRef(p) for p in module_rref.local_value().parameters(recurse)]


def _remote_forward(module_rref, device, *args, **kwargs):
    module = module_rref.local_value()
    if Device(device).type != "cpu":
        args = tuple(a.to(device) if hasattr(a, "to") and hasattr(a, "array") else a for a in args)
    return module.forward(*args, **kwargs)


def _train(module_rref, mode):
    module_rref.local_value().train(mode)


def _parse_remote_device(remote_device: str):
    if not isinstance(remote_device, str):
        raise TypeError(f"remote_device must be a string like 'worker1/cpu', got {remote_device!r}")
    on, _, device = remote_device.partition("/")
    if not on:
        raise ValueError(f"Could not parse remote_device: {remote_device!r}; expected "
                         "'<worker name>/<device>' or 'rank:<rank>/<device>'")
    if on.startswith("rank:"):
        try:
            on = int(on[len("rank:"):])
        except ValueError:
            raise ValueError(f"Could not parse remote_device: {remote_device!r}") from None
    return on, str(Device(device or "cpu"))


def _not_supported(name: str):
    def method(self, *args, **kwargs):
        raise ValueError(f"Method ``{name}`` not supported for RemoteModule")
    method.__name__ = name
    return method


class RemoteModule(Module):
    def __init__(self, remote_device: str, module_cls, args=None, kwargs=None,
                 _module_interface_cls=None):
        super().__init__()
        self.on, self.device = _parse_remote_device(remote_device)
        self.module_rref = api.remote(self.on, _create_module,
                                      args=(module_cls, tuple(args or ()), dict(kwargs or {}), self.device))

    @staticmethod
    def init_from_module_rref(remote_device: str, module_rref, _module_interface_cls=None):
        """A RemoteModule over an existing module RRef (no new module is created)."""
        m = RemoteModule.__new__(RemoteModule)
        Module.__init__(m)
        m.on, m.device = _parse_remote_device(remote_device)
        m.module_rref = module_rref
        return m

    def forward(self, *args, **kwargs):
        return api.rpc_sync(self.module_rref.owner(), _remote_forward,
                            args=(self.module_rref, self.device, *args), kwargs=kwargs)

    def forward_async(self, *args, **kwargs):
        return api.rpc_async(self.module_rref.owner(), _remote_forward,
                             args=(self.module_rref, self.device, *args), kwargs=kwargs)

    def remote_parameters(self, recurse: bool = True) -> list:
        return api.rpc_sync(self.module_rref.owner(), _param_rrefs, args=(self.module_rref, recurse))

    def get_module_rref(self):
        return self.module_rref

    def train(self, mode: bool = True):
        api.rpc_sync(self.module_rref.owner(), _train, args=(self.module_rref, mode))
        return self

    def eval(self):
        return self.train(False)

    def parameters(self, recurse: bool = True):
        raise ValueError("Method ``parameters`` not supported for RemoteModule. Please use "
                         "``remote_parameters`` instead.")

    for _name in ("register_buffer", "register_parameter", "add_module", "apply", "cuda", "cpu",
                  "type", "float", "double", "half", "bfloat16", "to", "state_dict",
                  "load_state_dict", "named_parameters", "buffers", "named_buffers", "children",
                  "named_children", "modules", "named_modules", "requires_grad_", "zero_grad",
                  "share_memory", "register_forward_hook", "register_forward_pre_hook",
                  "register_backward_hook", "register_full_backward_hook"):
        locals()[_name] = _not_supported(_name)
    del _name

    def extra_repr(self) -> str:
        return f"on={self.on!r}, device={self.device!r}"
