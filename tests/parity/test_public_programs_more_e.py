"""More public PyTorch programs (tests/parity/programs/) run on torch and, with only their
imports changed, on shardflow, from the same start, compared step by step (see
``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

The "Learning PyTorch with Examples" scripts (``programs/learning_pytorch/``) run as scripts
(``run_script``, ``__main__``); their printed losses and final coefficients are compared.
"""

import random
import types
from pathlib import Path

import numpy as np
import pytest

from .programs import tiny_gym
from .programs._harness import (
    _Draws,
    _Through,
    assert_close,
    assert_same_state,
    record_module_outputs,
    run_script,
)

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


def _linear_from_torch(mod, records, use_shardflow, nn_name=None):
    """The script's ``torch.nn.Linear`` (or, with ``nn_name``, its ``<nn_name>.Linear``)
    starting from torch's initial weights: the torch run records each new Linear's state,
    the shardflow run (same order) loads it."""
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
    if nn_name is not None:
        nn_view = getattr(mod, nn_name)
        if not isinstance(nn_view, _Through):
            nn_view = _Through(nn_view)
            setattr(mod, nn_name, nn_view)
        nn_view.Linear = Linear
        return
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


def test_fgsm_attack_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials fgsm_tutorial, run as a script: the LeNet under attack loads
    ``data/lenet_mnist_model.pth`` with ``torch.load(map_location='cpu')`` (the file is
    torch's ``state_dict`` of a seeded Net, written by this test, read by both runs), then
    for 7 epsilons every sample the model classifies right gets the input gradient of
    nll_loss (``data.requires_grad = True``, ``data.grad.data``), ``sign()``, the step and
    ``torch.clamp`` to [0, 1], and is classified again. The printed accuracies, the kept
    (initial, final) predictions and the perturbed images agree exactly: the images are
    ``clamp(x + eps * sign(grad))``, so one flipped gradient sign would show."""
    import torch

    torch.manual_seed(0)
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    path = Path(__file__).parent / "programs" / "fgsm_tutorial.py"
    # the weights file from the tutorial's own Net class (the file's source up to its loader)
    source = path.read_text()
    head = source.split("# MNIST Test dataset and dataloader declaration")[0]
    ns = {"__name__": "fgsm_head"}
    exec(compile(head, str(path), "exec"), ns)
    torch.save(ns["Net"]().state_dict(), tmp_path / "data" / "lenet_mnist_model.pth")
    results = []
    for use_sf in (False, True):
        mod = run_script(path, use_sf)
        out = capsys.readouterr().out
        printed = [line for line in out.splitlines() if line.startswith("Epsilon:")]
        results.append((mod, printed))
    (th, th_printed), (sf, sf_printed) = results
    assert len(th_printed) == 7
    assert sf_printed == th_printed
    assert sf.accuracies == th.accuracies
    assert th.accuracies[0] > 0 and th.accuracies[-1] < th.accuracies[0]  # some samples attacked
    for sf_ex, th_ex in zip(sf.examples, th.examples, strict=True):
        assert len(sf_ex) == len(th_ex)
        for (sf_init, sf_final, sf_img), (th_init, th_final, th_img) in zip(sf_ex, th_ex):
            assert (sf_init, sf_final) == (th_init, th_final)
            np.testing.assert_allclose(sf_img, th_img, rtol=0, atol=1e-7)


def _seeded_gymnasium(seed=0):
    """A ``gymnasium`` module for the DQN tutorial: ``make`` gives tiny_gym's CartPole (gym's
    dynamics), its start states and ``action_space.sample()`` seeded alike in both runs."""
    gym = types.ModuleType("gymnasium")

    def make(env_id):
        env = tiny_gym.make(env_id)
        env.reset(seed=seed)
        env.action_space.seed(seed)
        return env

    gym.make = make
    return gym


def test_dqn_tutorial_trains_like_torch():
    """pytorch/tutorials reinforcement_q_learning (the gymnasium version), run as a script on
    tiny_gym's CartPole: ReplayMemory (namedtuple Transition, deque, random.sample),
    epsilon-greedy actions (``max(1).indices``; Python's ``random`` seeded alike, the action
    space's samples from one seeded NumPy stream), ``gather``, ``max(1).values`` into a
    boolean-masked zeros tensor under no_grad, SmoothL1Loss, AdamW(amsgrad=True),
    clip_grad_value_ and the soft target update through state_dict after every step; 3
    episodes, batch 16. Both nets start from torch's weights (every nn.Linear the script
    builds loads torch's initial state). Same actions, so the same episodes; every
    SmoothL1Loss value agrees to rtol 1e-5, as do both nets' final weights."""
    records, runs = [], []
    for use_sf in (False, True):
        losses = []

        def after_imports(mod, _sf=use_sf, _losses=losses):
            record_module_outputs(mod, "nn", "SmoothL1Loss", _losses)
            _linear_from_torch(mod, records, _sf, nn_name="nn")

        random.seed(0)
        mod = run_script(Path(__file__).parent / "programs" / "reinforcement_q_learning.py", use_sf,
                         modules={"gymnasium": _seeded_gymnasium()}, after_imports=after_imports)
        runs.append((mod, losses))
    (th, th_losses), (sf, sf_losses) = runs
    assert len(records) == 6  # policy_net's and target_net's three Linears
    assert sf.episode_durations == th.episode_durations
    assert sum(th.episode_durations) > th.BATCH_SIZE + 5  # some optimisation steps ran
    assert len(sf_losses) == len(th_losses) == sum(th.episode_durations) - th.BATCH_SIZE + 1
    assert all(grad for grad, _ in th_losses)
    assert_close([v for _, v in sf_losses], [v for _, v in th_losses], "SmoothL1Loss per step")
    assert_same_state(sf.policy_net, th.policy_net, "policy_net")
    assert_same_state(sf.target_net, th.target_net, "target_net")


def _char_rnn_start(patch, use_shardflow, records, letter_losses):
    """For the char-RNN script, whose ``import torch.nn as nn`` comes mid-file after its data
    loading (so the program's own names cannot be wrapped before it builds its model): the
    framework's Linear, Dropout and NLLLoss are patched for this run only (``patch`` is a
    ``monkeypatch.context()``): each new Linear records (torch) or loads (shardflow, same
    order) torch's initial state, each Dropout gets p=0, each NLLLoss output is appended to
    ``letter_losses`` as ``(grad_enabled, value)``."""
    import torch

    import shardflow

    lib = shardflow if use_shardflow else torch
    linear_init, dropout_init, nll_forward = lib.nn.Linear.__init__, lib.nn.Dropout.__init__, lib.nn.NLLLoss.forward
    loaded = []

    def init_linear(self, *args, **kwargs):
        linear_init(self, *args, **kwargs)
        if not use_shardflow:
            records.append({k: v.detach().numpy().copy() for k, v in self.state_dict().items()})
            return
        self.load_state_dict({k: lib.from_numpy(v) for k, v in records[len(loaded)].items()})
        loaded.append(self)

    def init_dropout(self, *args, **kwargs):
        dropout_init(self, *args, **kwargs)
        self.p = 0.0

    def nll(self, input, target):
        out = nll_forward(self, input, target)
        letter_losses.append((lib.is_grad_enabled(), out.item()))
        return out

    patch.setattr(lib.nn.Linear, "__init__", init_linear)
    patch.setattr(lib.nn.Dropout, "__init__", init_dropout)
    patch.setattr(lib.nn.NLLLoss, "forward", nll)


_NAMES = {  # a tiny made-up names list, four languages (the tutorial samples these four)
    "Russian": ["Abakumov", "Babanin", "Chaikin", "Dobrolyubov", "Rusanov", "Utkin", "Sokolov"],
    "German": ["Adler", "Bauer", "Eberhardt", "Gerber", "Richter", "Engel"],
    "Spanish": ["Abana", "Pérez", "Alvarez", "Salazar", "Santos", "Pena", "Castillo"],
    "Chinese": ["Ang", "Chan", "Hou", "Ip", "Huang", "Chen", "Shi"],
}


@pytest.mark.filterwarnings("ignore:This overload of add_ is deprecated")  # the tutorial's own step
def test_char_rnn_generation_trains_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials char_rnn_generation_tutorial, run as a script on a tiny made-up names
    list written to data/names/ (unicodeToAscii strips "Pérez"'s accent): the hand-made RNN
    (three Linears over ``torch.cat``, Dropout, LogSoftmax(dim=1)), NLLLoss summed per
    letter from ``loss = 0``, ``target_line_tensor.unsqueeze_(-1)``, the old manual step
    ``p.data.add_(-learning_rate, p.grad.data)`` (torch's deprecated (Number, Tensor)
    overload, which shardflow now takes too), and greedy sampling (``output.topk(1)``,
    ``all_letters[topi]``). 30 iterations; Python's ``random`` (the training pairs) seeded
    alike, the Linears start from torch's weights, Dropout(0.1) set to p=0. Every per-letter
    NLLLoss, the printed per-name losses and the ``all_losses`` averages agree to rtol 1e-5,
    the sampled names are the same."""
    names = tmp_path / "data" / "names"
    names.mkdir(parents=True)
    for language, lines in _NAMES.items():
        (names / f"{language}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    records, runs = [], []
    for use_sf in (False, True):
        letter_losses = []
        random.seed(0)
        with monkeypatch.context() as patch:
            _char_rnn_start(patch, use_sf, records, letter_losses)
            mod = run_script(Path(__file__).parent / "programs" / "char_rnn_generation.py", use_sf)
        out = capsys.readouterr().out.splitlines()
        printed = [line.split(" ", 2)[2] for line in out if "%)" in line]
        sampled = out[-12:]
        runs.append((mod, letter_losses, printed, sampled))
    (th, th_letters, th_printed, th_names), (sf, sf_letters, sf_printed, sf_names) = runs
    assert len(records) == 3
    assert len(th_printed) == 30 and len(th_letters) > 30
    assert len(sf_letters) == len(th_letters)
    assert_close([v for _, v in sf_letters], [v for _, v in th_letters], "NLLLoss per letter")
    assert [p.split()[:2] for p in sf_printed] == [p.split()[:2] for p in th_printed]  # (iter pct%)
    assert_close([float(p.split()[-1]) for p in sf_printed], [float(p.split()[-1]) for p in th_printed],
                 "printed losses", rtol=0, atol=1e-4)  # printed with %.4f
    assert_close(sf.all_losses, th.all_losses, "all_losses")
    assert sf_names == th_names
    assert all(name[0] in "RUSGEPACHI" for name in th_names)
    assert_same_state(sf.rnn, th.rnn, "RNN")
