"""``register_full_backward_hook`` on a module run on global tensors (a broadcast or a
split(0) input, broadcast parameters): forward and backward run (they refused the hook's
pass-through output as "a local tensor that requires grad"), and the hook's grad_input /
grad_output are this rank's local views of the single-process ones (the whole gradient for
a broadcast input, this rank's rows for a split one). ``argv``: ``b`` or ``s0``."""

import warnings

import numpy as np

import shardflow as sf
from shardflow.distributed import distribute_tensor, get_rank, placement
from shardflow.distributed import sbp as S

from ._common import close


def _hooked(lin):
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    return seen


def main(argv):
    warnings.simplefilter("ignore")
    mesh = placement("cpu")
    split = argv[0] == "s0"
    sf.manual_seed(0)
    ref = sf.nn.Linear(4, 3)
    full = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    x_ref = sf.tensor(full, requires_grad=True)
    seen_ref = _hooked(ref)
    ref(x_ref).sum().backward()

    lin = sf.nn.Linear(4, 3)
    for name, p in list(ref.named_parameters()):
        setattr(lin, name, sf.nn.Parameter(distribute_tensor(p.detach(), mesh, [S.broadcast])))
    seen = _hooked(lin)
    x = sf.tensor(full, requires_grad=True)
    xg = distribute_tensor(x, mesh, [S.split(0) if split else S.broadcast])
    y = lin(xg)
    assert y.is_global, "the module's output stays global"
    y.sum().backward()
    (gi,), (go,) = seen[0]
    (gi_ref,), (go_ref,) = seen_ref[0]
    rows = slice(get_rank(), get_rank() + 1) if split else slice(None)
    close(gi.numpy(), gi_ref.numpy()[rows], "grad_input")
    close(go.numpy(), go_ref.numpy()[rows], "grad_output")
    close(lin.weight.grad.full_tensor().numpy(), ref.weight.grad.numpy(), "weight grad")
    print("full backward hook on global tensors", argv[0], "ok", flush=True)
