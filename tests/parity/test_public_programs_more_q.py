"""pytorch/tutorials' single-process tutorials and recipes, each run as a script on torch
and, with its imports rewritten, on shardflow, from the same ``manual_seed`` (no weight
copying, no shared draws: shardflow draws torch's numbers, docs/COMPAT.md "Random seeds"),
compared on every printed line (see ``test_public_programs.py`` and docs/COMPAT.md, "Public
programs").
"""

import re

import numpy as np
import pytest

from .programs._harness import HERE, assert_close, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

SEED = 0


def _run(tmp_path, monkeypatch, capsys, path, modules=None, seed=SEED, argv=()):
    """Run the script ``programs/<path>`` in ``tmp_path/<th|sf>`` on torch then shardflow,
    each after ``manual_seed(seed)``; ``modules(lib, use_sf)`` gives ``sys.modules`` entries
    (the torchvision stand-in ...). Returns ``[(module, printed lines), ...]``."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir()
        monkeypatch.chdir(where)
        lib.manual_seed(seed)
        extra = {} if modules is None else modules(lib, use_sf)
        mod = run_script(HERE / path, use_sf, argv=argv, modules=extra)
        runs.append((mod, capsys.readouterr().out.splitlines()))
    return runs


def test_understanding_leaf_vs_nonleaf_like_torch(tmp_path, monkeypatch, capsys):
    """beginner_source/understanding_leaf_vs_nonleaf_tutorial.py as a script: ``f"{x.is_leaf=}"``
    / ``requires_grad`` self-documenting f-strings, ``mse_loss`` of a ReLU'd affine layer,
    ``backward``, ``W.grad`` / ``b.grad`` printed, ``None`` for the leaves that need no grad
    and for a non-leaf (torch's warning), ``retain_grad()`` on ``z``, ``y_pred`` and the
    loss itself (``loss.grad=tensor(1.)``) after ``W.grad = None``. Every printed line is
    torch's, digit for digit; the non-leaf ``.grad`` access warns as torch does."""
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed") as record:
        (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys,
                                          "beginner/understanding_leaf_vs_nonleaf_tutorial.py")
    assert sum("not a leaf Tensor" in str(w.message) for w in record) == 2  # one per framework
    assert "loss.grad=tensor(1.)" in th_out and "z.grad=None" in th_out
    same_printout(sf_out, th_out, rtol=0, atol=0, what="understanding_leaf_vs_nonleaf")
    for name in ("W", "b", "z", "y_pred"):
        np.testing.assert_array_equal(getattr(sf, name).grad.numpy(), getattr(th, name).grad.numpy(), err_msg=name)


def test_retain_grad_without_requires_grad_raises_as_torch():
    """The tutorial's summary: ``retain_grad()`` on a tensor that does not require grad is an
    error, in both frameworks (RuntimeError); on a leaf that requires grad it is a no-op
    (``retains_grad`` stays False)."""
    import torch

    import shardflow

    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
            lib.ones(1, 3).retain_grad()
        w = lib.ones(3, requires_grad=True)
        w.retain_grad()
        assert w.retains_grad is False and (w * 2).sum().backward() is None and w.grad is not None


def test_zeroing_out_gradients_like_torch(tmp_path, monkeypatch, capsys):
    """recipes_source/recipes/zeroing_out_gradients.py as a script: CIFAR-10 (the torchvision
    stand-in: 20 + 4 synthetic images; the test set is never read) through ``ToTensor`` +
    ``Normalize``, shuffled
    ``DataLoader``s (no workers: see the program's header), the Net with ``x.flatten(start_dim=1)``
    trained 2 epochs by SGD with momentum, ``optimizer.zero_grad()`` every step; the loss
    printed with ``%.3f`` every 5 batches. From the same seed (torch's initial weights and
    shuffles) every printed line is torch's, and the trained weights agree to 1e-5."""
    from .programs._torchvision_standin import torchvision_modules

    (th, th_out), (sf, sf_out) = _run(
        tmp_path, monkeypatch, capsys, "recipes/zeroing_out_gradients.py",
        modules=lambda lib, use_sf: torchvision_modules(lib, {"train": 20, "test": 4}))
    assert sum("loss:" in line for line in th_out) == 2 and th_out[-1] == "Finished Training"
    same_printout(sf_out, th_out, rtol=0, atol=0, what="zeroing_out_gradients")
    for k, v in th.net.state_dict().items():
        assert_close(sf.net.state_dict()[k].numpy(), v.numpy(), f"Net {k} after 2 epochs")


def test_amp_recipe_cpu_parts_like_torch(tmp_path, monkeypatch, capsys):
    """recipes_source/recipes/amp_recipe.py, its CPU parts, as a script (sizes cut; the
    changes are in the program's header): ``set_default_device('cpu')``, a Linear/ReLU
    ``Sequential`` trained by SGD in float32, then under ``torch.autocast(device_type='cpu',
    dtype=torch.bfloat16)`` (the recipe's asserts: bfloat16 Linear output, float32
    ``mse_loss``), ``torch.cuda.amp.GradScaler()`` (deprecated: FutureWarning; no CUDA:
    disabled with a UserWarning, so ``scale`` / ``step`` / ``unscale_`` pass through, as in
    torch), ``clip_grad_norm_`` after ``unscale_``, and the checkpoint of model, optimizer
    and (empty) scaler state loaded back. From the same seed every printed line is torch's
    (execution times masked; the bfloat16 losses to their 6 printed decimals). The final
    weights agree to atol 2e-6: the 12 autocast steps take bfloat16 weight gradients
    (8 significant bits), and a gradient of ~0.1 one bfloat16 ulp apart (a different
    float32 summation order before the rounding) moves a weight by lr * 4e-4 = 4e-7 per
    step; measured: 6.4e-7 at most, in 8% of the first layer's weights."""
    with pytest.warns(FutureWarning, match=r"cuda\.amp\.GradScaler\(args\.\.\.\)` is deprecated"), \
            pytest.warns(UserWarning, match="GradScaler.*is enabled, but CUDA is not available.  Disabling"):
        (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "recipes/amp_recipe.py")
    mask = lambda lines: [line if not line.startswith("Total execution time") else "<time>" for line in lines]  # noqa: E731
    assert "mixed precision: loss" in th_out[-2] and "Max memory used by tensors = 0 bytes" in th_out
    same_printout(mask(sf_out), mask(th_out), rtol=0, atol=0, what="amp_recipe")
    assert th.checkpoint["scaler"] == {} and sf.checkpoint["scaler"] == {}
    assert list(sf.checkpoint["optimizer"]["state"]) == list(th.checkpoint["optimizer"]["state"])
    for k, v in th.net.state_dict().items():
        assert_close(sf.net.state_dict()[k].numpy(), v.numpy(), f"net {k}", rtol=0, atol=2e-6)


def test_timer_quick_start_like_torch(tmp_path, monkeypatch, capsys):
    """recipes_source/recipes/timer_quick_start.py, its Python sections, as a script: a
    ``Timer`` whose ``setup`` is an indented block string naming ``torch`` (which the program
    never passes: torch puts itself in the statement's globals; shardflow raised
    IndentationError, then would have raised NameError), ``num_threads=1``,
    ``blocked_autorange`` and the ``Measurement`` printed. Every line is torch's but the
    measured numbers and the object address (masked), the note a noisy machine
    adds and the IQR line (printed for 4 or more measurements: how many fit in the time)."""
    (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "recipes/timer_quick_start.py")
    assert th_out[1:5] == ["x * y", "setup:", "  x = torch.ones((128,))", "  y = torch.ones((128,))"]
    # one measurement prints its value alone ("  6.30 us"), several a "  Median: " line (how
    # many fit in the time depends on the machine's load: seen in CI)
    single = re.compile(r"^  [\d.]+ [mun]?s$")
    assert th_out[6].startswith("  Median: ") or single.match(th_out[6])
    # "N measurements, R runs per measurement, 1 thread", or "1 measurement, R runs , 1 thread"
    assert any(line.endswith(" 1 thread") for line in th_out)

    def mask(lines):
        # a noisy machine adds a "WARNING: Interquartile range is ..." note in either run, and
        # the IQR line is there only for 4 or more measurements (how many fit in the time)
        lines = [line for line in lines if "WARNING" not in line and not line.strip().startswith(("This ", "IQR:"))]
        lines = ["  Median: " + line.strip() if single.match(line) else line for line in lines]
        return [re.sub(r"[\d.]+", "#", re.sub(r"0x[0-9a-f]+", "0x", line)) for line in lines]

    assert mask(sf_out) == mask([line.replace("torch.utils.benchmark.utils.common", "shardflow.utils.benchmark.common")
                                 for line in th_out])
    assert sf.m.median > 0 and sf.m.number_per_run >= 1


def test_changing_default_device_like_torch(tmp_path, monkeypatch, capsys):
    """recipes_source/recipes/changing_default_device.py as a script, with ``'meta'`` for
    ``'cuda'`` (no GPU here): a CPU Linear on ``randn(..., device='cpu')``, then
    ``with torch.device('meta'):`` (parameters and ``randn`` made inside land on it) and
    ``set_default_device('meta')`` (the fixture puts the default back). Every printed line
    is torch's; the recipe as written (``'cuda'``) raises AssertionError in both."""
    import torch

    import shardflow

    (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "recipes/changing_default_device.py")
    assert th_out == ["cpu", "meta", "meta", "meta", "meta"]
    same_printout(sf_out, th_out, rtol=0, atol=0, what="changing_default_device")
    assert sf.inp.device.type == "cpu" and sf.mod.weight.is_meta
    torch.set_default_device(None)
    shardflow.set_default_device(None)
    for lib in (torch, shardflow):
        assert not lib.cuda.is_available()
        with pytest.raises(AssertionError), lib.device("cuda"):
            lib.nn.Linear(2, 3)
        with pytest.raises(AssertionError):
            lib.set_default_device("cuda")
            lib.randn(2)
        lib.set_default_device(None)


def test_visualizing_gradients_like_torch(tmp_path, monkeypatch, capsys):
    """intermediate_source/visualizing_gradients_tutorial.py as a script: two MLPs of
    Linear -> BatchNorm1d / Identity -> Sigmoid blocks (their printed first blocks), forward
    hooks on every leaf module that register a backward hook on its output tensor, 10 SGD
    steps with momentum on ``randn`` / ``randint`` data, the hooked output gradients' mean
    absolute values per layer, plotted with matplotlib (0-d tensors as points). From the same
    seed (torch's data and initial weights) the printout is torch's; the hooked gradients
    come in torch's order (last layer first) with torch's values, the plotted points and the
    trained weights too (1e-5). Below a BatchNorm the hooked gradient is a difference of
    nearly equal terms (``g - mean(g) - x_hat * mean(g * x_hat)``), so its small entries
    are held to 1e-5 of the layer's largest, not of their own size: measured, below the
    three BatchNorms up to 12% of the entries differ from torch's by more than 1e-5 of
    themselves, all by at most 4e-6 of the layer's largest (without BatchNorm: 4e-7)."""
    import matplotlib

    matplotlib.use("Agg")
    (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "intermediate/visualizing_gradients_tutorial.py")
    assert th_out[1].startswith("  (0): Linear(in_features=784") and "  (1): Identity()" in th_out
    same_printout(sf_out, th_out, rtol=0, atol=0, what="visualizing_gradients")
    for which in ("bn", "nobn"):
        th_grads, sf_grads = getattr(th, f"grads_{which}"), getattr(sf, f"grads_{which}")
        assert [name for name, _ in sf_grads] == [name for name, _ in th_grads], which
        assert th_grads[0][0] == "layers.3" and len(th_grads) == (10 if which == "bn" else 10)
        for (name, sf_g), (_, th_g) in zip(sf_grads, th_grads, strict=True):
            scale = float(np.abs(th_g.numpy()).max())
            assert_close(sf_g.numpy(), th_g.numpy(), f"{which} {name} output grad", atol=1e-5 * scale)
        assert getattr(sf, f"layer_idx_{which}") == getattr(th, f"layer_idx_{which}")
        model_th, model_sf = getattr(th, f"model_{which}"), getattr(sf, f"model_{which}")
        for k, v in model_th.state_dict().items():
            assert_close(model_sf.state_dict()[k].numpy(), v.numpy(), f"{which} {k}")
    th_lines, sf_lines = th.ax.get_lines(), sf.ax.get_lines()
    assert [line.get_label() for line in sf_lines] == ["With BatchNorm", "Without BatchNorm"]
    for sf_line, th_line in zip(sf_lines, th_lines, strict=True):
        assert_close(np.asarray(sf_line.get_ydata(), float), np.asarray(th_line.get_ydata(), float), "plotted")
        assert list(sf_line.get_xdata()) == list(th_line.get_xdata())


def test_memory_format_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """intermediate_source/memory_format_tutorial.py ("Channels Last Memory Format"), its CPU
    parts, as a script: ``stride()`` of an ``empty`` NCHW tensor after
    ``to(memory_format=torch.channels_last)``, back to ``contiguous_format``,
    ``contiguous(memory_format=...)``, the ``is_contiguous`` checks (the ambiguous N1HW
    case True for both formats), ``empty(..., memory_format=channels_last)``, ``clone``,
    ``empty_like`` and ``x + y`` keeping the layout, then a Conv2d made channels-last with
    ``Module.to(memory_format=)`` on a channels-last input: its output is channels-last. Every
    printed line is torch's (shardflow printed row-major strides and False before the
    layout was built)."""
    (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "intermediate/memory_format_tutorial.py")
    assert th_out.count("(3072, 1, 96, 3)") == 6 and th_out[-2:] == ["True", "True"]
    same_printout(sf_out, th_out, rtol=0, atol=0, what="memory_format_tutorial")
    assert sf.model.weight.stride() == th.model.weight.stride() == (72, 1, 24, 8)
    assert_close(sf.output.detach().numpy(), th.output.detach().numpy(), "conv output")
    assert sf.contains_cl([sf.input]) and th.contains_cl([th.input]) and not sf.contains_cl([sf.special_x])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_intro_to_torchscript_like_torch_until_the_graph(tmp_path, monkeypatch, capsys):
    """beginner_source/Intro_to_TorchScript_tutorial.py as a script. torch runs it all
    (graphs, TorchScript code, save / load). shardflow has no TorchScript compiler: it runs
    the eager part and ``torch.jit.trace`` as torch prints it -- the three MyCell versions
    with ``rand`` inputs from the same seed and torch's initial weights, their printouts and
    outputs (``grad_fn=<TanhBackward0>``), and the traced module's own printout
    (``MyCell(original_name=MyCell (linear): Linear(original_name=Linear))``) -- and stops at
    ``print(traced_cell.graph)`` with a NotImplementedError that says it has no TorchScript
    IR and what to do instead. Every line printed up to there is torch's, digit for digit,
    but ``torch.__version__`` (shardflow's own). The rest (scripting, mixing, the loaded
    module's printout) is compared in ``tests/compat/test_jit_surface.py``."""
    import torch

    import shardflow

    path = HERE / "beginner" / "Intro_to_TorchScript_tutorial.py"
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(SEED)
    th = run_script(path, False)
    th_out = capsys.readouterr().out.splitlines()
    shardflow.manual_seed(SEED)
    with pytest.raises(NotImplementedError, match="TracedModule.graph: shardflow has no TorchScript compiler.*"
                                                  r"shardflow.save\(module.state_dict\(\), path\)"):
        run_script(path, True)
    sf_out = capsys.readouterr().out.splitlines()
    assert th_out[0] == torch.__version__ and sf_out[0] == shardflow.__version__
    assert sf_out[-4:] == ["MyCell(", "  original_name=MyCell", "  (linear): Linear(original_name=Linear)", ")"]
    assert th_out[len(sf_out)].startswith("graph(%self.1 : __torch__.MyCell,")
    assert "RecursiveScriptModule(" in th_out and (tmp_path / "wrapped_rnn.pt").exists()
    assert type(th.loaded).__name__ == "RecursiveScriptModule"
    same_printout(sf_out[1:], th_out[1:len(sf_out)], rtol=0, atol=0, what="Intro_to_TorchScript")


def _word_lm_data(where, torch):
    """The dynamic quantization tutorial's ``data/``: a made-up corpus in WikiText-2's file
    layout and ``word_language_model_quantize.pth``, weights torch saved from a seeded model
    of the tutorial's layout at the program's sizes (its vocabulary: the corpus's words and
    ``<eos>``)."""
    rng = np.random.default_rng(0)
    words = "the cat sat on a mat while dog ran to park and bird sang in tree under sun".split()
    corpus = where / "data" / "wikitext-2"
    corpus.mkdir(parents=True)
    vocab = set()
    for split, n in (("train", 12), ("valid", 4), ("test", 8)):
        lines = [" ".join(rng.choice(words, rng.integers(4, 10))) for _ in range(n)]
        vocab.update(" ".join(lines).split())
        (corpus / f"{split}.txt").write_text("\n".join(lines) + "\n")
    ntokens = len(vocab) + 1
    torch.manual_seed(7)
    layers = {"encoder": torch.nn.Embedding(ntokens, 16), "rnn": torch.nn.LSTM(16, 8, 2),
              "decoder": torch.nn.Linear(8, ntokens)}
    state = {f"{name}.{k}": v for name, m in layers.items() for k, v in m.state_dict().items()}
    torch.save(state, where / "data" / "word_language_model_quantize.pth")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_dynamic_quantization_lstm_word_lm_like_torch(tmp_path, monkeypatch, capsys):
    """advanced_source/dynamic_quantization_tutorial.py as a script (small sizes, the test's
    corpus and torch-saved weights; see the program's header): ``ctypes`` OMP setup,
    the LSTM language model loaded from torch's ``.pth`` and printed, 60 words generated by
    ``torch.multinomial`` from the same seed (torch's draws: the same words), then
    ``torch.quantization.quantize_dynamic`` over ``{nn.LSTM, nn.Linear}`` to qint8 (its
    printout: ``DynamicQuantizedLSTM`` / ``DynamicQuantizedLinear`` with torch's scale and
    zero point), the state-dict file sizes (masked: the two libraries' file formats differ)
    and the float and quantized test losses with ``{:.3f}`` (times masked). Every other line
    is torch's. The tutorial reads ``ctypes.util`` having imported only ``ctypes`` (a
    notebook has imported it already): the test imports it first."""
    import ctypes.util  # noqa: F401  (see the docstring)

    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir()
        _word_lm_data(where, torch)
        monkeypatch.chdir(where)
        lib.manual_seed(SEED)
        mod = run_script(HERE / "advanced" / "dynamic_quantization_tutorial.py", use_sf)
        runs.append((mod, capsys.readouterr().out.splitlines()))
    (th, th_out), (sf, sf_out) = runs

    def mask(lines):
        return [re.sub(r"(Size \(MB\):|elapsed time \(seconds\):) .*", r"\1 #", line) for line in lines]

    assert th_out[0] == "LSTMModel(" and "| Generated 0/1000 words" in th_out
    assert any("DynamicQuantizedLSTM(" in line for line in th_out) and th_out[-4].startswith("loss: ")
    same_printout(mask(sf_out), mask(th_out), rtol=0, atol=0, what="dynamic_quantization_tutorial")
    assert sf.all_output == th.all_output


def test_former_torchies_tensor_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """beginner_source/former_torchies/tensor_tutorial.py as a script: ``empty``, a float64
    ``randn`` from the same seed, ``fill_`` / ``add``, indexing and slicing, column
    assignment into ``empty``, ``index_add_`` along dim 1, and the NumPy bridge both ways
    (``numpy()`` and ``from_numpy`` share memory: the in-place changes show through). Every
    printed line is torch's, digit for digit."""
    (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "former_torchies/tensor_tutorial.py")
    assert "tensor([2., 2., 2., 2., 2.], dtype=torch.float64)" in th_out and "[2. 2. 2. 2. 2.]" in th_out
    same_printout(sf_out, th_out, rtol=0, atol=0, what="former_torchies tensor_tutorial")
    np.testing.assert_array_equal(sf.x.numpy(), th.x.numpy())


def test_former_torchies_nn_package_like_torch(tmp_path, monkeypatch, capsys):
    """beginner_source/former_torchies/nnft_tutorial.py as a script: the MNIST ConvNet
    printed and run on ``randn`` (torch's initial weights and input from the same seed), its
    cross-entropy and the conv1 weight / gradient norms, a forward hook printing the input /
    output types, sizes and norm, then the legacy ``register_backward_hook`` on conv2: its
    ``grad_input`` is the convolution node's (input, weight, bias) gradients, as torch's, and
    it warns torch's FutureWarning (shardflow ran it as a full hook, without the warning);
    finally the RNN cell reused over 5 time steps, one backward of the summed MSE. Every
    printed line is torch's to 4 printed decimals (``shardflow.Tensor`` read as
    ``torch.Tensor``)."""
    with pytest.warns(FutureWarning, match="non-full backward hook when the forward contains multiple") as record:
        (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "former_torchies/nnft_tutorial.py")
    assert sum("non-full backward hook" in str(w.message) for w in record) == 2  # one per library
    assert "Inside Conv2d backward" in th_out and "grad_input size: torch.Size([1, 10, 12, 12])" in th_out
    same_printout(sf_out, th_out, rtol=0, atol=1e-4, what="former_torchies nnft_tutorial")
    for name in ("i2h", "h2o"):
        layer_th, layer_sf = getattr(th.rnn, name), getattr(sf.rnn, name)
        assert_close(layer_sf.weight.grad.numpy(), layer_th.weight.grad.numpy(), f"rnn {name} weight grad")
    assert_close(sf.loss.item(), th.loss.item(), "rnn loss")


def test_knowledge_distillation_like_torch(tmp_path, monkeypatch, capsys):
    """beginner_source/knowledge_distillation_tutorial.py as a script (narrower networks,
    batches of 8, one epoch per training; see the program's header): CIFAR-10 through the
    torchvision stand-in (8 + 8 images), the teacher and a student trained by Adam with
    cross-entropy from ``manual_seed(42)`` (dropout masks from the same seed: torch's),
    ``torch.norm`` of the first layers, parameter counts with ``"{:,}"``, then distillation
    with softened targets (T=2), the cosine-embedding-loss variant (``avg_pool1d`` of the
    teacher's features; ``load_state_dict`` from the trained teacher) and the regressor /
    MSE variant, with every accuracy. Every printed line is torch's; the running losses,
    printed with all 17 digits, to rtol 1e-6 (measured: 2e-7 at most, a float32 ulp or two
    of the summed ``loss.item()``s). The students' weights after their one Adam step agree
    to 1e-6 but for a few entries whose gradient is rounding noise (``|g|`` near Adam's
    eps: the step ``lr * g / (|g| + eps)`` is then anything up to ``lr``; measured 2 of
    65536 in the cosine student's first Linear): those are bounded by ``lr``."""
    from .programs._torchvision_standin import torchvision_modules

    (th, th_out), (sf, sf_out) = _run(
        tmp_path, monkeypatch, capsys, "beginner/knowledge_distillation_tutorial.py",
        modules=lambda lib, use_sf: torchvision_modules(lib, {"train": 8, "test": 8}))
    assert th_out[2] == th_out[3].replace("new_nn_light", "nn_light") and th_out[4].startswith("DeepNN parameters: ")
    assert th_out[-1].startswith("Student accuracy with CE + RegressorMSE:")
    same_printout(sf_out, th_out, rtol=1e-6, atol=0, what="knowledge_distillation")
    for name in ("new_nn_light", "modified_light_nn", "modified_light_nn_mse"):
        for k, v in getattr(th, name).state_dict().items():
            diff = np.abs(getattr(sf, name).state_dict()[k].numpy() - v.numpy())
            # Adam's first step is lr * g / (|g| + eps): a gradient entry of rounding size
            # (|g| ~ eps) moves by anything up to lr on either side
            assert diff.max() <= 1e-3 + 1e-6 and np.mean(diff > 1e-6) < 1e-3, (name, k, diff.max())


def test_former_torchies_autograd_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """beginner_source/former_torchies/autograd_tutorial.py as a script: ``ones`` with
    ``requires_grad``, ``.data``, ``.grad`` None, ``grad_fn`` None / ``<AddBackward0 ...>``,
    ``y * y * 3`` and its mean (``MulBackward0`` / ``MeanBackward0``), then
    ``a.to(requires_grad=True)``, which torch 2.13 refuses (TypeError: ``to()`` takes no
    ``requires_grad``; the tutorial predates that): shardflow refuses it too, after printing
    the same lines, digit for digit (addresses masked)."""
    import torch

    import shardflow

    path = HERE / "former_torchies" / "autograd_tutorial.py"
    monkeypatch.chdir(tmp_path)
    outs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        lib.manual_seed(SEED)
        with pytest.raises(TypeError, match="requires_grad"):
            run_script(path, use_sf)
        outs.append(capsys.readouterr().out.splitlines())
    th_out, sf_out = outs
    assert th_out[-1] == "False" and any(line.startswith("<AddBackward0 object at") for line in th_out)
    same_printout(sf_out, th_out, rtol=0, atol=0, what="former_torchies autograd_tutorial")


def test_former_torchies_parallelism_tutorial_like_torch(tmp_path, monkeypatch, capsys):
    """beginner_source/former_torchies/parallelism_tutorial.py as a script (it only defines
    its classes and ``data_parallel``), then used on the CPU as the tutorial says ("the code
    does not need to be changed in CPU-mode"): ``DataParallelModel`` with an
    ``nn.DataParallel`` block from the same seed prints as torch's (``(module): Linear``),
    has torch's state-dict keys (``block2.module.weight``) and output (1e-6), and
    ``data_parallel(model, x, [])`` runs the module itself; ``DistributedModel`` asks for
    ``.cuda(0)``, a RuntimeError in both without a GPU."""
    import torch

    import shardflow

    path = HERE / "former_torchies" / "parallelism_tutorial.py"
    monkeypatch.chdir(tmp_path)
    results = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        program = run_script(path, use_sf)
        lib.manual_seed(SEED)
        model = program.DataParallelModel()
        x = lib.randn(4, 10)
        out, direct = model(x), program.data_parallel(model, x, [])
        with pytest.raises(RuntimeError):
            program.DistributedModel()
        results.append((repr(model), list(model.state_dict()), out.detach().numpy(), direct.detach().numpy()))
    (th_repr, th_keys, th_y, th_direct), (sf_repr, sf_keys, sf_y, sf_direct) = results
    assert sf_repr == th_repr and "  (block2): DataParallel(" in th_repr
    assert sf_keys == th_keys and "block2.module.weight" in th_keys
    assert_close(sf_y, th_y, "DataParallelModel output")
    np.testing.assert_array_equal(sf_direct, sf_y)
    assert capsys.readouterr().out == ""


def test_saving_multiple_models_in_one_file_like_torch(tmp_path, monkeypatch, capsys):
    """recipes_source/recipes/saving_multiple_models_in_one_file.py as a script: two Nets and
    their SGD optimizers saved in one ``torch.save`` dict, loaded back into fresh models
    (``torch.load`` with its default ``weights_only=True`` reads the file shardflow wrote),
    ``eval()`` then ``train()``. From the same seed (torch's initial weights) the checkpoint
    has torch's keys, state-dict keys and optimizer state dicts, and the loaded models hold
    netA's / netB's values exactly, as in torch; shardflow reads torch's file too."""
    import shardflow

    (th, th_out), (sf, sf_out) = _run(tmp_path, monkeypatch, capsys, "recipes/saving_multiple_models_in_one_file.py")
    assert th_out == sf_out == []
    assert list(sf.checkpoint) == list(th.checkpoint)
    for key in ("modelA_state_dict", "modelB_state_dict"):
        assert list(sf.checkpoint[key]) == list(th.checkpoint[key])
        for k, v in th.checkpoint[key].items():
            np.testing.assert_array_equal(sf.checkpoint[key][k].numpy(), v.numpy(), err_msg=f"{key} {k}")
    for key in ("optimizerA_state_dict", "optimizerB_state_dict"):
        assert sf.checkpoint[key] == th.checkpoint[key]
    for loaded, saved in (("modelA", "netA"), ("modelB", "netB")):
        assert getattr(sf, loaded).training and getattr(th, loaded).training
        for k, v in getattr(sf, saved).state_dict().items():
            np.testing.assert_array_equal(getattr(sf, loaded).state_dict()[k].numpy(), v.numpy(), err_msg=k)
    assert not np.array_equal(sf.netA.conv1.weight.detach().numpy(), sf.netB.conv1.weight.detach().numpy())
    # shardflow reads the file torch wrote (the other way round is not built: docs/COMPAT.md)
    from_torch = shardflow.load(tmp_path / "th" / "model.pt")
    assert list(from_torch) == list(th.checkpoint) and from_torch["optimizerB_state_dict"] == th.checkpoint[
        "optimizerB_state_dict"]


def test_saving_and_loading_models_for_inference_like_torch(tmp_path, monkeypatch, capsys):
    """recipes_source/recipes/saving_and_loading_models_for_inference.py as a script (its
    ``__main__`` registered in ``sys.modules`` while it runs, as ``python recipe.py`` has it,
    so that pickle finds ``__main__.Net``): the Net printed, its ``state_dict`` saved and
    loaded into a fresh Net (``torch.load``'s default ``weights_only=True`` reads it), then
    the entire model saved with ``torch.save(net, PATH)`` and read back with ``torch.load(PATH)``:
    torch 2.13 refuses that by default (``weights_only=True``: UnpicklingError, "Weights only
    load failed"), and shardflow refuses it with the same exception type. Up to there every
    printed line is torch's and the loaded state equals the saved one."""
    import pickle
    import sys

    import torch

    import shardflow

    path = HERE / "recipes" / "saving_and_loading_models_for_inference.py"
    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir()
        monkeypatch.chdir(where)
        lib.manual_seed(SEED)
        seen = {}

        def as_main(module, _seen=seen):
            _seen["module"] = module
            monkeypatch.setitem(sys.modules, "__main__", module)

        with pytest.raises(pickle.UnpicklingError, match="[Ww]eights.only"):
            run_script(path, use_sf, after_imports=as_main)
        monkeypatch.undo()
        runs.append((seen["module"], capsys.readouterr().out.splitlines(), where))
    (th, th_out, th_dir), (sf, sf_out, sf_dir) = runs
    assert th_out[0] == "Net(" and (th_dir / "entire_model.pt").exists() and (sf_dir / "entire_model.pt").exists()
    same_printout(sf_out, th_out, rtol=0, atol=0, what="saving_and_loading_models_for_inference")
    for k, v in sf.net.state_dict().items():
        np.testing.assert_array_equal(sf.model.state_dict()[k].numpy(), v.numpy(), err_msg=k)
        np.testing.assert_array_equal(v.numpy(), th.net.state_dict()[k].numpy(), err_msg=k)
    assert sf.model.training is False
