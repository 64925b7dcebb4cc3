"""The first programs a PyTorch user writes, run on torch and, with only their imports
changed, on shardflow, from the same start, compared step by step (see
``test_public_programs.py`` and docs/COMPAT.md, "Public programs"): Karpathy's "Let's build
GPT" lecture scripts (``programs/ng_video_lecture/``) and pytorch/tutorials' beginner
tutorials (``programs/beginner/``), each run as a script (``run_script``, ``__main__``)."""

import gzip
import pickle
import re
import sys
import types

import numpy as np
import pytest

from .programs._harness import (
    HERE,
    _Through,
    assert_close,
    record_calls,
    record_module_outputs,
    run_script,
    same_draws,
)

pytestmark = pytest.mark.usefixtures("torch_single_thread")

LECTURE = HERE / "ng_video_lecture"
BEGINNER = HERE / "beginner"
_NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")


def same_printout(sf_lines, th_lines, rtol=1e-5, atol=1e-6, what="printout"):
    """The two printouts agree line by line: the text around the decimal numbers exactly,
    the numbers to ``rtol`` / ``atol`` (a float printed with 4 or 6 decimals can round to
    a different last digit; ``atol`` says how many; object addresses are masked). shardflow names its dtypes and sizes
    ``shardflow.float32`` / ``shardflow.Size`` where torch prints ``torch.``: that prefix is
    read as torch's (as ``tests/test_tensor_format.py`` does)."""
    th_lines = [re.sub(r"0x[0-9a-f]+", "0x", line.replace("torch.", "shardflow.")) for line in th_lines]
    sf_lines = [re.sub(r"0x[0-9a-f]+", "0x", line) for line in sf_lines]
    assert len(sf_lines) == len(th_lines), (what, "\n".join(sf_lines), "\n".join(th_lines))
    for i, (sf_line, th_line) in enumerate(zip(sf_lines, th_lines, strict=True)):
        assert _NUMBER.sub("#", sf_line) == _NUMBER.sub("#", th_line), (what, i, sf_line, th_line)
        sf_numbers = [float(w) for w in _NUMBER.findall(sf_line)]
        th_numbers = [float(w) for w in _NUMBER.findall(th_line)]
        assert_close(sf_numbers, th_numbers, f"{what} line {i}: {sf_line!r} vs {th_line!r}", rtol, atol)

# A few lines of prose: the lecture scripts read ``input.txt`` from the working directory.
TEXT = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\n"
    "Resolved. resolved.\n\nFirst Citizen:\nFirst, you know Caius Marcius is chief enemy "
    "to the people.\n\nAll:\nWe know't, we know't.\n\nFirst Citizen:\nLet us kill him, and "
    "we'll have corn at our own price.\nIs't a verdict?\n"
) * 3


def share_init(program, owner: str, class_names, records: list, use_shardflow: bool) -> None:
    """Make ``program.<owner>.<Class>`` (e.g. ``nn.Embedding``) start from torch's initial
    weights: in the torch run each new instance records its ``state_dict``; in the shardflow
    run (same construction order) each loads the next record. The subclass keeps the class's
    name, so ``print(model)`` reads the same; ``isinstance`` against the real class holds."""
    view = getattr(program, owner)
    if not isinstance(view, _Through):
        view = _Through(view)
        setattr(program, owner, view)
    lib = program.torch
    loaded = [0]
    for name in class_names:
        base = getattr(view._lib, name)

        def __init__(self, *args, _base=base, **kwargs):
            _base.__init__(self, *args, **kwargs)
            if not use_shardflow:
                records.append({k: v.detach().numpy().copy() for k, v in self.state_dict().items()})
                return
            if loaded[0] >= len(records):
                raise AssertionError(f"the shardflow run built more modules than the torch run ({len(records)})")
            self.load_state_dict({k: lib.from_numpy(v) for k, v in records[loaded[0]].items()})
            loaded[0] += 1

        setattr(view, name, type(name, (base,), {"__init__": __init__, "__module__": base.__module__}))


def _run_lecture(tmp_path, monkeypatch, capsys, name, prepare):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "input.txt").write_text(TEXT)
    runs = []
    for use_sf in (False, True):
        losses = []

        def after_imports(mod, _sf=use_sf, _losses=losses):
            same_draws((mod,), ["randint", "multinomial"])
            record_calls(mod, "F", "cross_entropy", _losses)
            prepare(mod, _sf)

        mod = run_script(LECTURE / f"{name}.py", use_sf, after_imports=after_imports)
        runs.append((mod, losses, capsys.readouterr().out.splitlines()))
    return runs


def _printed_losses(lines):
    return [[float(w.rstrip(",")) for w in line.split()[4::3]] for line in lines if line.startswith("step ")]


def test_ng_video_lecture_bigram_like_torch(tmp_path, monkeypatch, capsys):
    """karpathy/ng-video-lecture ``bigram.py`` as a script: the bigram table (nn.Embedding,
    torch's initial weights), ``get_batch`` (``torch.randint``, shared draws; slices by 0-d
    tensors), ``estimate_loss`` under ``@torch.no_grad()`` (``losses[k] = loss.item()``,
    ``losses.mean()`` formatted with ``:.4f``), AdamW, and ``generate`` by
    ``torch.multinomial`` (shared draws). Every cross-entropy loss (training and evaluation)
    agrees to rtol 1e-5, the printed lines and the generated text are the same."""
    records = []
    (th, th_losses, th_out), (sf, sf_losses, sf_out) = _run_lecture(
        tmp_path, monkeypatch, capsys, "bigram",
        lambda mod, use_sf: share_init(mod, "nn", ["Embedding"], records, use_sf))
    assert len(records) == 1
    assert len(sf_losses) == len(th_losses) == 2 * 2 * 3 + 8  # 2 evaluations of 2 x 3, 8 steps
    assert_close(sf_losses, th_losses, "bigram cross-entropy losses")
    assert len(_printed_losses(th_out)) == 2
    assert_close(_printed_losses(sf_out), _printed_losses(th_out), "printed losses", rtol=0, atol=1e-4)
    assert sf_out == th_out
    assert len(th_out[-1]) >= 50  # the generated text (61 characters, newlines split it)
    assert_close(sf.model.token_embedding_table.weight.detach().numpy(),
                 th.model.token_embedding_table.weight.detach().numpy(), "bigram table")


def test_ng_video_lecture_gpt_like_torch(tmp_path, monkeypatch, capsys):
    """karpathy/ng-video-lecture ``gpt.py`` as a script: the decoder-only Transformer of the
    lecture (per-head Linear key/query/value, a ``tril`` buffer with ``masked_fill(-inf)``,
    ``torch.cat`` of heads, pre-LayerNorm blocks in ``nn.Sequential``), initialised by
    ``self.apply(_init_weights)`` with ``torch.nn.init.normal_`` (shared draws) and
    ``zeros_``; the parameter count line, ``estimate_loss`` (also at the last step), AdamW,
    ``generate`` cropping to ``block_size`` with ``torch.multinomial`` (shared draws).
    Dropout is 0 (its constant; masks are random). Every cross-entropy loss agrees to rtol
    1e-5, the printout and the generated text are the same. The weights after 6 AdamW steps
    agree to atol 3e-5 (lr / 10): Adam divides by the gradient's own size, so an entry whose
    gradient is rounding-sized (a ReLU input near 0) moves by a fraction of lr on rounding
    noise; measured 7e-6 on one entry of 1024, every other entry within 1e-6."""
    runs = _run_lecture(tmp_path, monkeypatch, capsys, "gpt",
                        lambda mod, use_sf: same_draws((mod,), ["nn.init.normal_"], seed=1))
    (th, th_losses, th_out), (sf, sf_losses, sf_out) = runs
    assert len(sf_losses) == len(th_losses) == 3 * 2 * 2 + 6
    assert_close(sf_losses, th_losses, "gpt cross-entropy losses")
    assert th_out[0].endswith("M parameters")
    assert_close(_printed_losses(sf_out), _printed_losses(th_out), "printed losses", rtol=0, atol=1e-4)
    assert sf_out == th_out
    for k, v in th.model.state_dict().items():
        assert_close(sf.model.state_dict()[k].numpy(), v.numpy(), f"gpt {k}", rtol=1e-4, atol=3e-5)
    assert np.isfinite(th_losses).all()


def _run_beginner(tmp_path, monkeypatch, capsys, name, prepare=None, sizes=None, modules=None):
    """Run ``beginner/<name>.py`` as a script in ``tmp_path`` on torch then shardflow, with the
    torchvision stand-in; ``prepare(mod, use_sf)`` runs after its leading imports;
    ``modules(lib, use_sf)`` gives more ``sys.modules`` entries (:func:`shared_modules`).
    Returns ``[(module, printed lines), ...]``."""
    import matplotlib
    import torch

    import shardflow

    from .programs._torchvision_standin import torchvision_modules

    matplotlib.use("Agg")  # plt.show() draws nothing
    monkeypatch.chdir(tmp_path)
    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        after = None if prepare is None else (lambda m, _sf=use_sf: prepare(m, _sf))
        extra = {} if modules is None else modules(lib, use_sf)
        mod = run_script(BEGINNER / f"{name}.py", use_sf, modules={**torchvision_modules(lib, sizes), **extra},
                         after_imports=after)
        runs.append((mod, capsys.readouterr().out.splitlines()))
    return runs


def test_quickstart_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/quickstart_tutorial.py as a script: FashionMNIST through
    ``ToTensor`` and DataLoader (the stand-in's synthetic images), ``f"{X.shape}"`` and
    ``y.dtype`` printed, ``print(model)`` of the Flatten + Linear/ReLU stack (torch's
    initial weights), CrossEntropyLoss + SGD for 5 epochs, test accuracy through
    ``(pred.argmax(1) == y).type(torch.float).sum().item()``, ``torch.save`` of the
    state_dict and ``torch.load(weights_only=True)`` into a new model, the prediction by
    ``classes[pred[0].argmax(0)]``. Every loss (train and test, recorded as the criterion
    returns it) agrees to rtol 1e-5; the printout is the same but for the last printed digit
    of a loss (atol 1e-6)."""
    records, losses = [], {False: [], True: []}

    def prepare(mod, use_sf):
        share_init(mod, "nn", ["Linear"], records, use_sf)
        record_module_outputs(mod, "nn", "CrossEntropyLoss", losses[use_sf])

    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "quickstart_tutorial", prepare)
    assert len(losses[True]) == len(losses[False]) == 5 * (3 + 2)
    assert_close([v for _, v in losses[True]], [v for _, v in losses[False]], "quickstart losses")
    assert [g for g, _ in losses[True]] == [g for g, _ in losses[False]]
    assert th_out[0] == "Shape of X [N, C, H, W]: torch.Size([64, 1, 28, 28])"
    same_printout(sf_out, th_out, atol=1e-6, what="quickstart")
    assert th_out[-1].startswith("Predicted: ")
    for k, v in th.model.state_dict().items():
        assert_close(sf.model.state_dict()[k].numpy(), v.numpy(), f"quickstart {k}")


def _module_copy(real, **names):
    """A module object with ``real``'s attributes and ``names`` over them, under ``real``'s
    name: it stands in ``sys.modules`` while a script whose imports come mid-file runs, so
    that ``import torch`` / ``from torch import nn`` there find the shared draws."""
    copy = types.ModuleType(real.__name__)
    copy.__dict__.update(real.__dict__)
    copy.__dict__.update(names)
    return copy


def shared_modules(lib, use_shardflow: bool, records: list, init_classes=("Linear", "Conv2d"), seed=0) -> dict:
    """``sys.modules`` entries for a script that imports ``torch`` mid-file (run_script's
    ``modules=``): its ``torch.randn`` draws from a NumPy stream seeded ``seed``; its
    ``nn.<init_classes>`` start from torch's initial weights (:func:`share_init`); its
    ``DataLoader(shuffle=True)`` takes its order from a shared stream (the frameworks'
    generators differ)."""
    from .programs._harness import _Draws

    name = lib.__name__
    rng = np.random.default_rng(seed)
    draws = _Draws(lib, rng, ["randn", "RandomSampler"])
    holder = types.SimpleNamespace(torch=lib, nn=lib.nn)
    share_init(holder, "nn", init_classes, records, use_shardflow)
    sampler = draws.utils.data.RandomSampler
    data = sys.modules[f"{name}.utils.data"]

    def DataLoader(dataset, batch_size=1, shuffle=None, sampler_=None, **kwargs):
        if shuffle:
            return data.DataLoader(dataset, batch_size=batch_size, sampler=sampler(dataset), **kwargs)
        return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, **kwargs)

    nn = _module_copy(lib.nn, **{k: getattr(holder.nn, k) for k in init_classes})
    data_copy = _module_copy(data, DataLoader=DataLoader)
    utils = _module_copy(lib.utils, data=data_copy)
    return {name: _module_copy(lib, randn=draws.randn, nn=nn, utils=utils), f"{name}.nn": nn,
            f"{name}.utils": utils, f"{name}.utils.data": data_copy}


def _write_mnist_pickle(folder):
    """data/mnist/mnist.pkl.gz as the tutorial downloads it: ((x, y) train, valid, test),
    float32 rows of 784 pixels in [0, 1), mostly 0 as MNIST's (mean about 0.1), int64
    labels; labels follow a fixed linear map of the pixels, so that training lowers the
    loss."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((784, 10))

    def split(n):
        x = (rng.random((n, 784)) * (rng.random((n, 784)) < 0.2)).astype(np.float32)
        return x, np.argmax((x - x.mean(0)) @ w, 1).astype(np.int64)

    (folder / "data" / "mnist").mkdir(parents=True)
    with gzip.open(folder / "data" / "mnist" / "mnist.pkl.gz", "wb") as f:
        pickle.dump((split(192), split(160), split(32)), f)


def test_nn_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials nn_tutorial.py ("What is torch.nn really?") as a script, its data a
    synthetic mnist.pkl.gz read by its own gzip/pickle code: the printed tensors (``print(x_train,
    y_train)``, ``preds[0]`` with its grad_fn, the hand-written ``nll`` and ``accuracy``), the
    logistic regression by hand (``requires_grad_()``, ``-=`` under ``no_grad``,
    ``grad.zero_()``), with ``F.cross_entropy``, as an nn.Module of Parameters, with nn.Linear,
    optim.SGD, TensorDataset slices, DataLoader, validation with ``sum()`` of loss tensors,
    ``fit``/``get_data`` with ``loss.item()``, the CNN (SGD momentum), ``nn.Sequential`` with
    ``Lambda`` modules and ``AvgPool2d`` / ``AdaptiveAvgPool2d``, the ``WrappedDataLoader``
    generator, ``.to(dev)``. ``torch.randn`` (the weights) and the shuffled order are shared
    draws; nn.Linear / nn.Conv2d start from torch's weights. Every cross-entropy loss agrees
    to rtol 1e-5, the printout line by line (numbers printed with 4 decimals to 1e-4)."""
    import matplotlib
    import torch

    import shardflow
    from shardflow.testing.parity import refuse_torch_names

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    # the program imports requests (its download branch, which the data written here skips)
    # and IPython's set_trace (never called): stand-ins, as neither is a dependency (a clean
    # install lacks both)
    monkeypatch.setitem(sys.modules, "requests", types.ModuleType("requests"))
    ipython = types.ModuleType("IPython")
    # (matplotlib asks these when IPython is loaded: no shell, a version needing no fix-up)
    ipython.get_ipython = lambda: None
    ipython.version_info = (8, 24, 0)
    ipython.core = types.ModuleType("IPython.core")
    ipython.core.debugger = types.ModuleType("IPython.core.debugger")
    ipython.core.debugger.set_trace = lambda *args, **kwargs: None
    for name, module in (("IPython", ipython), ("IPython.core", ipython.core),
                         ("IPython.core.debugger", ipython.core.debugger)):
        monkeypatch.setitem(sys.modules, name, module)
    _write_mnist_pickle(tmp_path)
    records, runs = [], []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        losses = []
        modules = shared_modules(lib, use_sf, records)
        real_ce = lib.nn.functional.cross_entropy

        def cross_entropy(*args, _ce=real_ce, _losses=losses, **kwargs):
            out = _ce(*args, **kwargs)
            _losses.append(out.item())
            return out

        modules[f"{lib.__name__}.nn"].functional = _module_copy(lib.nn.functional, cross_entropy=cross_entropy)
        mod = run_script(BEGINNER / "nn_tutorial.py", use_sf, modules=modules)
        if use_sf:
            refuse_torch_names(mod)
        runs.append((mod, losses, capsys.readouterr().out.splitlines()))
    (th, th_losses, th_out), (sf, sf_losses, sf_out) = runs
    assert len(records) == 6 + 3 * 3  # nn.Linear: once, then get_model() 5 times; 3 CNNs of 3 Conv2d
    assert len(sf_losses) == len(th_losses) > 50
    assert_close(sf_losses, th_losses, "nn_tutorial cross-entropy losses")
    same_printout(sf_out, th_out, rtol=1e-5, atol=1e-4, what="nn_tutorial")
    for k, v in th.model.state_dict().items():
        assert_close(sf.model.state_dict()[k].numpy(), v.numpy(), f"nn_tutorial final CNN {k}")


def test_blitz_neural_networks_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials blitz/neural_networks_tutorial.py as a script: ``print(net)`` of
    LeNet, ``len(params)`` and ``params[0].size()``, the output for a random input and
    ``out.backward(torch.randn(1, 10))`` (shared ``randn`` draws; Conv2d/Linear start from
    torch's weights), MSELoss against an int64 ``arange`` target, the printed ``grad_fn`` chain
    (``MseLossBackward0`` -> ``AddmmBackward0`` -> the bias's ``AccumulateGrad``, torch's order
    of linear's inputs), conv1's bias gradient before (None) and after backward, one SGD
    step. The printout is the same line by line (4 printed decimals to 1e-4) and the net's
    weights after the step to 1e-6."""
    records = []

    def prepare(mod, use_sf):
        same_draws((mod,), ["randn"])
        share_init(mod, "nn", ["Conv2d", "Linear"], records, use_sf)

    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "neural_networks_tutorial", prepare)
    assert len(records) == 5  # one LeNet: 2 Conv2d, 3 Linear
    assert any(line.startswith("<AccumulateGrad object at") for line in th_out)
    same_printout(sf_out, th_out, atol=1e-4, what="neural_networks_tutorial")
    assert_close(sf.loss.item(), th.loss.item(), "MSE loss")
    for k, v in th.net.state_dict().items():
        assert_close(sf.net.state_dict()[k].numpy(), v.numpy(), f"LeNet {k} after the SGD step")


def test_blitz_cifar10_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials blitz/cifar10_tutorial.py as a script: CIFAR10 through
    ``Compose([ToTensor(), Normalize(...)])`` (the stand-in's synthetic images),
    ``torch.utils.data.DataLoader(shuffle=True)`` (the shuffled order a shared draw;
    ``num_workers`` 0 here, see the program's header), ``next(iter(trainloader))``,
    ``imshow(make_grid(images))`` (``img / 2 + 0.5``, ``.numpy()``), labels through ``f'{classes[labels[j]]:5s}'`` (a 0-d tensor as a tuple
    index), the Net with ``nn.MaxPool2d`` and ``torch.flatten(x, 1)`` (torch's weights), SGD
    with momentum for 2 epochs, ``torch.save``/``torch.load`` of the state_dict,
    ``torch.max(outputs, 1)``, per-class accuracy through ``label == prediction`` on 0-d
    tensors as dict keys' indices. Every criterion loss agrees to rtol 1e-5, the printout is
    the same line by line."""
    records, losses = [], {False: [], True: []}

    def modules(lib, use_sf):
        mods = shared_modules(lib, use_sf, records)
        holder = types.SimpleNamespace(nn=mods[f"{lib.__name__}.nn"])
        record_module_outputs(holder, "nn", "CrossEntropyLoss", losses[use_sf])
        mods[f"{lib.__name__}.nn"].CrossEntropyLoss = holder.nn.CrossEntropyLoss
        return mods

    (th, th_out), (sf, sf_out) = _run_beginner(
        tmp_path, monkeypatch, capsys, "cifar10_tutorial", sizes={"train": 48, "test": 40}, modules=modules)
    assert len(records) == 2 * 5  # two Nets of 2 Conv2d + 3 Linear
    assert len(losses[True]) == len(losses[False]) == 2 * 12
    assert_close([v for _, v in losses[True]], [v for _, v in losses[False]], "cifar10 losses")
    same_printout(sf_out, th_out, atol=1e-3, what="cifar10_tutorial")
    assert len([line for line in th_out if line.startswith("[")]) == 4
    for k, v in th.net.state_dict().items():
        assert_close(sf.net.state_dict()[k].numpy(), v.numpy(), f"cifar10 Net {k}")


def _shared_rand(mod, seed=0):
    """The script's ``torch.rand`` / ``rand_like`` / ``randn`` / ``randn_like`` drawing from a
    NumPy stream seeded ``seed`` (float32 draws), their ``dtype=`` / ``device=`` /
    ``requires_grad=`` honoured."""
    from .programs._harness import _Draws

    lib = mod.torch
    draws = _Draws(lib, np.random.default_rng(seed), ["rand", "rand_like", "randn", "randn_like"])
    rand, rand_like, randn, randn_like = draws.rand, draws.rand_like, draws.randn, draws.randn_like

    def _to(t, dtype=None, device=None, requires_grad=False, **kwargs):
        if kwargs:
            raise NotImplementedError(f"shared rand draws: {sorted(kwargs)}")
        return t.to(dtype=dtype or lib.get_default_dtype(), device=device).requires_grad_(requires_grad)

    draws.rand = lambda *size, **kw: _to(rand(*size), **kw)
    draws.rand_like = lambda t, **kw: _to(rand_like(t), **{"dtype": t.dtype, **kw})
    draws.randn = lambda *size, **kw: _to(randn(*size), **kw)
    draws.randn_like = lambda t, **kw: _to(randn_like(t), **{"dtype": t.dtype, **kw})
    mod.torch = draws


def test_tensorqs_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/tensorqs_tutorial.py as a script: tensors from lists and
    NumPy, ``ones_like``, ``rand_like(x_data, dtype=torch.float)`` and ``rand(shape)``
    (shared draws), tensors in f-strings, ``shape``/``dtype``/``device``, the CUDA check
    ``torch.cuda.is_available() & (torch.device('cuda').index is not None)`` (both operands
    evaluated), indexing with ``...``, ``tensor[:,1] = 0``, ``torch.cat``, ``@`` / ``matmul``
    / ``mul`` with ``out=``, ``.item()``, ``add_``, and the NumPy bridge both ways (shared
    memory). The printout is the same line by line."""
    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "tensorqs_tutorial",
                                               lambda mod, use_sf: _shared_rand(mod))
    same_printout(sf_out, th_out, rtol=0, atol=0, what="tensorqs_tutorial")
    assert "n: [2. 2. 2. 2. 2.]" in th_out  # the bridge shares memory (torch)
    for name in ("y1", "y2", "y3", "z1", "z2", "z3"):
        assert_close(getattr(sf, name).numpy(), getattr(th, name).numpy(), name)


def test_buildmodel_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/buildmodel_tutorial.py as a script: ``print(model)``, a
    forward on ``torch.rand(1, 28, 28, device=device)`` (shared draws; torch's Linear
    weights), ``nn.Softmax(dim=1)(logits).argmax(1)`` in an f-string, ``nn.Flatten``,
    ``nn.Linear(in_features=, out_features=)``, tensors with ``grad_fn=<AddmmBackward0>`` /
    ``<ReluBackward0>`` in f-strings, ``nn.Sequential`` of existing modules, and every
    ``named_parameters()`` entry printed with ``param.size()`` and ``param[:2]``
    (``grad_fn=<SliceBackward0>``). The printout is the same line by line (4 printed decimals
    to 1e-4)."""
    records = []

    def prepare(mod, use_sf):
        _shared_rand(mod)
        share_init(mod, "nn", ["Linear"], records, use_sf)

    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "buildmodel_tutorial", prepare)
    assert len(records) == 5
    assert any("grad_fn=<SliceBackward0>" in line for line in th_out)
    same_printout(sf_out, th_out, atol=1e-4, what="buildmodel_tutorial")
    assert_close(sf.pred_probab.detach().numpy(), th.pred_probab.detach().numpy(), "softmax")


def test_autogradqs_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/autogradqs_tutorial.py as a script: ``torch.randn(...,
    requires_grad=True)`` weights (shared draws), ``binary_cross_entropy_with_logits``, the
    ``grad_fn`` of ``matmul(x, w) + b`` and of the loss in f-strings, ``w.grad``/``b.grad``,
    ``requires_grad`` under ``no_grad`` and after ``detach()``, and the Jacobian-product
    section: ``backward(ones_like(out), retain_graph=True)`` on ``(eye(4, 5) + 1).pow(2).t()``
    twice (accumulated) and after ``inp.grad.zero_()``. The printout is the same line by
    line (4 printed decimals to 1e-4)."""
    def prepare(mod, use_sf):
        same_draws((mod,), ["randn"])
        randn = mod.torch.randn
        mod.torch.randn = lambda *size, requires_grad=False: randn(*size).requires_grad_(requires_grad)

    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "autogradqs_tutorial", prepare)
    assert th_out[0].startswith("Gradient function for z = <AddBackward0 object at")
    same_printout(sf_out, th_out, atol=1e-4, what="autogradqs_tutorial")
    assert_close(sf.w.grad.numpy(), th.w.grad.numpy(), "w.grad")
    assert_close(sf.inp.grad.numpy(), th.inp.grad.numpy(), "inp.grad")


def test_optimization_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/optimization_tutorial.py as a script: the FashionMNIST MLP
    (torch's weights) trained by ``train_loop`` / ``test_loop`` (CrossEntropyLoss, SGD,
    ``model.train()`` / ``model.eval()``, ``no_grad``) for 4 epochs. Every loss agrees to
    rtol 1e-5 and the printout line by line (6 printed decimals to 1e-6)."""
    records, losses = [], {False: [], True: []}

    def prepare(mod, use_sf):
        share_init(mod, "nn", ["Linear"], records, use_sf)
        record_module_outputs(mod, "nn", "CrossEntropyLoss", losses[use_sf])

    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "optimization_tutorial", prepare)
    assert len(losses[True]) == len(losses[False]) == 4 * (3 + 2)
    assert_close([v for _, v in losses[True]], [v for _, v in losses[False]], "optimization losses")
    same_printout(sf_out, th_out, atol=1e-6, what="optimization_tutorial")
    for k, v in th.model.state_dict().items():
        assert_close(sf.model.state_dict()[k].numpy(), v.numpy(), f"optimization {k}")


def test_blitz_tensor_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials blitz/tensor_tutorial.py ("What is PyTorch?", with ``from __future__
    import print_function``) as a script: ``empty`` (its values unset in torch: that
    printout is only compared in shape), ``rand``, ``zeros(dtype=torch.long)``,
    ``x.new_ones(5, 3, dtype=torch.double)``, ``randn_like(x, dtype=torch.float)`` (shared
    draws), ``size()``, ``x + y`` / ``torch.add`` / ``add(out=)`` / ``add_``, ``view(-1, 8)``,
    ``.item()``, the NumPy bridge both ways. The printout is the same line by line."""
    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "tensor_tutorial",
                                               lambda mod, use_sf: _shared_rand(mod))
    assert th_out[0].startswith("tensor([[") and th_out[5].startswith("tensor([[")  # empty(5, 3), 5 lines
    assert [len(line) > 0 for line in sf_out[:5]] == [len(line) > 0 for line in th_out[:5]]
    same_printout(sf_out[5:], th_out[5:], atol=1e-4, what="tensor_tutorial")
    assert_close(sf.result.numpy(), th.result.numpy(), "add(out=)")


def test_blitz_autograd_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials blitz/autograd_tutorial.py, the ``Variable`` version, as a script:
    ``Variable(torch.ones(2, 2), requires_grad=True)``, ``y.grad_fn``, ``z.mean()`` backward
    (4.5 everywhere), then ``x = Variable(torch.randn(3), requires_grad=True)`` (shared
    draws) doubled ``while y.data.norm() < 1000``, ``y.backward(torch.FloatTensor([0.1, 1.0,
    0.0001]))``. The printout is the same line by line."""
    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "autograd_tutorial",
                                               lambda mod, use_sf: _shared_rand(mod))
    assert "tensor([[4.5000, 4.5000]," in th_out
    same_printout(sf_out, th_out, atol=1e-4, what="autograd_tutorial")
    assert_close(sf.x.grad.numpy(), th.x.grad.numpy(), "x.grad")


def _pandas_standin():
    """The two pandas names data_tutorial uses: ``read_csv`` (a header line, then rows) and
    ``DataFrame.iloc[row, column]`` (numbers as NumPy int64, as pandas gives them)."""
    import csv

    class _ILoc:
        def __init__(self, rows):
            self.rows = rows

        def __getitem__(self, key):
            value = self.rows[key[0]][key[1]]
            return np.int64(value) if value.lstrip("-").isdigit() else value

    class DataFrame:
        def __init__(self, rows):
            self.iloc = _ILoc(rows)
            self._n = len(rows)

        def __len__(self):
            return self._n

    def read_csv(path):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        return DataFrame(rows[1:])

    pandas = types.ModuleType("pandas")
    pandas.read_csv, pandas.DataFrame = read_csv, DataFrame
    return pandas


@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy")  # torch's Tensor, plotted
def test_data_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/data_tutorial.py as a script: FashionMNIST samples indexed by
    ``torch.randint(len(training_data), size=(1,)).item()`` (shared draws) and plotted, the
    custom ``Dataset`` subclass, ``DataLoader(shuffle=True)`` (shared order) and
    ``next(iter(...))``, ``size()`` and a 0-d label tensor in f-strings; and (added, see the
    program's header) the CustomImageDataset over 6 PNG files and a labels.csv, with
    ``read_image`` and NumPy int64 labels collated by the DataLoader. The printout is the
    same line by line."""
    from PIL import Image

    (tmp_path / "img").mkdir()
    rng = np.random.default_rng(3)
    rows = ["file,label"]
    for k in range(6):
        Image.fromarray(rng.integers(0, 256, (5, 4), dtype=np.uint8), mode="L").save(tmp_path / "img" / f"im{k}.png")
        rows.append(f"im{k}.png,{k % 3}")
    (tmp_path / "img" / "labels.csv").write_text("\n".join(rows) + "\n")
    records = []

    def modules(lib, use_sf):
        return {**shared_modules(lib, use_sf, records), "pandas": _pandas_standin()}

    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "data_tutorial",
                                               lambda mod, use_sf: same_draws((mod,), ["randint"]), modules=modules)
    assert th_out[0] == "Feature batch shape: torch.Size([64, 1, 28, 28])"
    assert len(th_out) == 3 + 2 and th_out[-1].startswith("torch.Size([2, 1, 5, 4]) torch.float32 tensor([1, 2])")
    same_printout(sf_out, th_out, rtol=0, atol=0, what="data_tutorial")
    assert_close(sf.train_features.numpy(), th.train_features.numpy(), "the shuffled first batch")


def test_saveloadrun_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/saveloadrun_tutorial.py as a script: ``torch.save`` of a
    VGG-16's ``state_dict`` (the stand-in's seeded "pretrained" weights), a fresh model's
    ``load_state_dict(torch.load(...))`` and ``eval()``, then ``torch.save(model)`` of the
    whole module and ``torch.load(..., weights_only=False)`` back (its class found through
    pickle). Each run's reloaded model has the pretrained state exactly, prints as torch's,
    is in eval mode, and gives the same output as torch's on one input (rtol 1e-5)."""
    (th, th_out), (sf, sf_out) = _run_beginner(tmp_path, monkeypatch, capsys, "saveloadrun_tutorial")
    assert type(sf.model).__name__ == type(th.model).__name__ == "VGG"
    assert not sf.model.training and not th.model.training
    th_state, sf_state = th.model.state_dict(), sf.model.state_dict()
    assert list(sf_state) == list(th_state) and len(th_state) == 2 * 13 + 2 * 3
    for k, v in th_state.items():
        np.testing.assert_array_equal(sf_state[k].numpy(), v.numpy(), err_msg=k)
    assert repr(sf.model) == repr(th.model)
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    with th.torch.no_grad():
        want = th.model(th.torch.from_numpy(x)).numpy()
    with sf.torch.no_grad():
        got = sf.model(sf.torch.from_numpy(x)).numpy()
    assert_close(got, want, "VGG output after the round trips")


def test_transforms_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/tutorials basics/transforms_tutorial.py as a script: FashionMNIST with
    ``ToTensor()`` and the one-hot ``target_transform``, ``Lambda(lambda y: torch.zeros(10,
    dtype=torch.float).scatter_(0, torch.tensor(y), value=1))`` (a 0-d index: it raised on
    shardflow before), in both of the tutorial's spellings. Samples of ``ds`` and the
    transform of every label agree exactly."""
    (th, _), (sf, _) = _run_beginner(tmp_path, monkeypatch, capsys, "transforms_tutorial")
    for i in range(4):
        (sf_x, sf_y), (th_x, th_y) = sf.ds[i], th.ds[i]
        np.testing.assert_array_equal(sf_x.numpy(), th_x.numpy())
        np.testing.assert_array_equal(sf_y.numpy(), th_y.numpy())
        assert th_y.sum().item() == 1 and sf_y.dtype == sf.torch.float32
    for y in range(10):
        np.testing.assert_array_equal(sf.target_transform(y).numpy(), th.target_transform(y).numpy())
