"""``torch.autograd.graph.save_on_cpu`` with CUDA tensors (CuPy's host stand-in): the saved
activations leave the device when packed and come back for backward (autograd/saved_hooks.py);
the gradients equal those computed without it."""

import numpy as np

import shardflow as sf


def test_save_on_cpu_moves_cuda_saved_tensors_to_host_and_back():
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((4, 3)).astype(np.float32)
    layer = sf.nn.Linear(3, 2).to("cuda")
    x = sf.tensor(x_host, device="cuda", requires_grad=True)
    (plain,) = sf.autograd.grad(layer(x).tanh().sum(), x)

    seen = []

    class recording(sf.autograd.graph.save_on_cpu):
        def __init__(self):
            super().__init__()
            pack, unpack = self.pack_hook, self.unpack_hook
            self.pack_hook = lambda t: seen.append(("pack", t.device.type)) or pack(t)
            self.unpack_hook = lambda p: (lambda t: seen.append(("unpack", p[1].device.type, t.device.type)) or t)(unpack(p))

    with recording():
        y = layer(x).tanh().sum()
    node = y.grad_fn.next_functions[0][0]  # tanh's node keeps its output, packed on the host
    packed = node.__dict__["_sf_packed"]
    assert all(p.value[1].device.type == "cpu" for p in packed.values())
    (hooked,) = sf.autograd.grad(y, x)
    assert seen and {s[1] for s in seen if s[0] == "pack"} == {"cuda"}
    assert {(s[1], s[2]) for s in seen if s[0] == "unpack"} == {("cpu", "cuda")}
    assert hooked.device.type == "cuda"
    np.testing.assert_allclose(hooked.cpu().numpy(), plain.cpu().numpy(), rtol=1e-6)
