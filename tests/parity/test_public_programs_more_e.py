"""More public PyTorch programs (tests/parity/programs/) run on torch and, with only their
imports changed, on shardflow, from the same start, compared step by step (see
``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

The "Learning PyTorch with Examples" scripts (``programs/learning_pytorch/``) run as scripts
(``run_script``, ``__main__``); their printed losses and final coefficients are compared.
"""

import random
from pathlib import Path

import numpy as np
import pytest

from .programs._harness import _Draws, _Through, assert_close, run_script

pytestmark = pytest.mark.usefixtures("torch_single_thread")

LEARNING = Path(__file__).parent / "programs" / "learning_pytorch"


def _shared_randn(mod, seed=0):
    """The script's ``torch.randn`` drawing from a NumPy stream seeded ``seed`` (float32), its
    ``requires_grad=`` honoured (the scripts make their weights with it)."""
    draws = _Draws(mod.torch, np.random.default_rng(seed), ["randn"])

    shared = draws.randn

    def randn(*size, requires_grad=False, **kwargs):
        return shared(*size, **kwargs).requires_grad_(requires_grad)

    draws.randn = randn
    mod.torch = draws


def _linear_from_torch(mod, records, use_shardflow):
    """The script's ``torch.nn.Linear`` starting from torch's initial weights: the torch run
    records each new Linear's state, the shardflow run (same order) loads it."""
    lib = mod.torch
    base = lib.nn.Linear

    class Linear(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if not use_shardflow:
                records.append({k: v.detach().numpy().copy() for k, v in self.state_dict().items()})
                return
            self.load_state_dict({k: lib.from_numpy(v) for k, v in records[len(loaded)].items()})
            loaded.append(self)

    loaded = []
    view = _Through(lib)
    view.nn = _Through(lib.nn)
    view.nn.Linear = Linear
    mod.torch = view


def _run_both(capsys, name, prepare=None):
    """Run ``learning_pytorch/<name>.py`` on torch then shardflow; ``prepare(mod, use_sf)``
    runs after its imports. Returns ``[(losses, result_numbers, module), ...]`` per run."""
    runs = []
    for use_sf in (False, True):
        random.seed(0)  # dynamic_net's random.randint: the same orders in both runs
        mod = run_script(LEARNING / f"{name}.py", use_sf,
                         after_imports=None if prepare is None else (lambda m, _sf=use_sf: prepare(m, _sf)))
        out = capsys.readouterr().out.splitlines()
        losses = [float(line.split()[1]) for line in out if line[:1].isdigit()]
        result = [line for line in out if line.startswith("Result:")]
        assert len(result) == 1, out
        numbers = [float(w) for w in result[0].replace("(", " ").replace(")", " ").split()
                   if w.lstrip("-").replace(".", "", 1).replace("e-", "", 1).replace("e+", "", 1).isdigit()]
        runs.append((losses, numbers, mod))
    return runs


@pytest.mark.parametrize("name, steps", [
    ("polynomial_tensor", 200),
    ("polynomial_autograd", 200),
    ("polynomial_custom_function", 200),
    ("polynomial_module", 200),
    ("dynamic_net", 300),
])
def test_learning_pytorch_with_examples_randn_weights(capsys, name, steps):
    """pytorch/tutorials "Learning PyTorch with Examples": the cubic fitted to sin(x) by hand
    (polynomial_tensor: matmul(input=, other=), in-place updates), with autograd
    (polynomial_autograd: torch.accelerator, set_default_device, leaf updates under
    no_grad, ``grad = None``), with a custom autograd.Function (polynomial_custom_function),
    as a Module of nn.Parameters with SGD (polynomial_module), and dynamic_net (a random
    order per forward from Python's ``random``, seeded alike; SGD with momentum). The
    weights come from ``torch.randn(())``, given the same NumPy draws in both runs. Every
    printed loss (each 10th step) and the final coefficients agree to rtol 1e-5."""
    (th_losses, th_result, _), (sf_losses, sf_result, _) = _run_both(capsys, name, lambda m, _sf: _shared_randn(m))
    assert len(sf_losses) == len(th_losses) == steps // 10
    assert_close(sf_losses, th_losses, f"{name} losses")
    assert len(sf_result) == len(th_result) >= 4
    assert_close(sf_result, th_result, f"{name} coefficients")
    assert th_losses[-1] < th_losses[0]


@pytest.mark.parametrize("name", ["polynomial_nn", "polynomial_optim"])
def test_learning_pytorch_with_examples_linear(capsys, name):
    """pytorch/tutorials "Learning PyTorch with Examples", the nn versions: Sequential(Linear(3,
    1), Flatten(0, 1)) on ``x.unsqueeze(-1).pow(p)`` with an integer exponent tensor,
    MSELoss(sum), and either ``model.zero_grad()`` + a manual update over
    ``model.parameters()`` (polynomial_nn) or optim.SGD (polynomial_optim). The Linear
    starts from torch's weights. Printed losses and final coefficients to rtol 1e-5."""
    records = []
    (th_losses, th_result, _), (sf_losses, sf_result, _) = _run_both(
        capsys, name, lambda m, sf: _linear_from_torch(m, records, sf))
    assert len(records) == 1
    assert len(sf_losses) == len(th_losses) == 20
    assert_close(sf_losses, th_losses, f"{name} losses")
    assert len(sf_result) == len(th_result) == 4
    assert_close(sf_result, th_result, f"{name} coefficients")
    assert th_losses[-1] < th_losses[0]
