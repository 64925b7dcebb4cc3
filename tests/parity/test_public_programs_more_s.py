"""MorvanZhou/PyTorch-Tutorial and hunkim/PyTorchZeroToAll: beginner scripts in older
PyTorch styles (``Variable``, ``F.sigmoid``, ``.data.numpy()``, ``torch.max(out, 1)[1]``,
whole-model ``torch.save``), each run as a script on torch and, with its imports rewritten,
on shardflow, from the same ``manual_seed`` and NumPy seed (no weight copying, no shared
draws: shardflow draws torch's numbers, docs/COMPAT.md "Random seeds"), compared on every
printed line and on everything it plotted (matplotlib is a recording stand-in,
``programs/_plt_standin.py``: the plotted arrays and the ``'Loss=%.4f'`` texts are the
tutorials' real output). See ``test_public_programs.py`` and docs/COMPAT.md, "Public
programs".
"""

import re
import warnings

import numpy as np
import pytest

from .programs._harness import HERE, assert_close, run_script
from .programs._plt_standin import matplotlib_modules, plot_lines
from .test_public_programs_more_h import _NUMBER, same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

SEED = 0
MORVAN = "morvan_tutorial"


def _run(tmp_path, monkeypatch, capsys, path, modules=None, seed=SEED, as_main=True, raises=None, files=None):
    """Run ``programs/<path>`` in ``tmp_path/<th|sf>`` on torch then shardflow, each after
    ``manual_seed(seed)`` and ``np.random.seed(seed)``, matplotlib recorded; ``modules(lib)``
    gives more ``sys.modules`` entries (the torchvision stand-in); ``files`` (``{relative
    path: bytes}``) are written into each run's directory first (a data file). With
    ``raises`` (an exception type), the script must raise it in both runs (torch 2.13 fails
    on the line too): then ``module`` is the exception. Returns ``[(module, printed lines,
    plotted lines, plotted arrays, warning messages), ...]``."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir(parents=True)
        for name, data in (files or {}).items():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            (where / name).write_bytes(data)
        monkeypatch.chdir(where)
        lib.manual_seed(seed)
        np.random.seed(seed)
        calls = []
        extra = {**matplotlib_modules(calls), **({} if modules is None else modules(lib))}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if raises is None:
                mod = run_script(HERE / path, use_sf, modules=extra, as_main=as_main)
            else:
                with pytest.raises(raises) as info:
                    run_script(HERE / path, use_sf, modules=extra, as_main=as_main)
                mod = info.value
        # torch's C++ warnings end with where they were raised: not part of the message
        messages = [re.sub(r" \(Triggered internally at [^)]*\)$", "", f"{w.category.__name__}: {w.message}")
                    for w in caught]
        runs.append((mod, capsys.readouterr().out.splitlines(), *plot_lines(calls), messages))
    return runs


def _same_run(runs, what, rtol=1e-5, atol=1e-6, loose=None):
    """Both runs printed and plotted the same: the text around the numbers exactly, the
    numbers and the plotted arrays to ``rtol`` / ``atol``; ``loose(index, line)``, when
    given, returns ``(rtol, atol)`` for a plot line held to other bounds, or ``"text"`` for
    one compared in its words only (each test says why)."""
    (_, th_out, th_plot, th_arrays, th_warned), (_, sf_out, sf_plot, sf_arrays, sf_warned) = runs
    assert sf_warned == th_warned, what  # the same deprecation warnings, in the same order
    same_printout(sf_out, th_out, rtol=rtol, atol=atol, what=f"{what} printout")
    assert len(sf_plot) == len(th_plot), (what, len(sf_plot), len(th_plot))
    for i, (s_line, t_line, s_arrays, t_arrays) in enumerate(zip(sf_plot, th_plot, sf_arrays, th_arrays)):
        bounds = (loose(i, t_line) if loose is not None else None) or (rtol, atol)
        if bounds == "text":  # the words only (the test says why)
            assert _NUMBER.sub("#", s_line) == _NUMBER.sub("#", t_line), (what, i, s_line, t_line)
            continue
        same_printout([s_line], [t_line], *bounds, what=f"{what} plot {i}")
        assert len(s_arrays) == len(t_arrays), (what, i, t_line)
        for s, t in zip(s_arrays, t_arrays, strict=True):
            assert_close(s, t, f"{what} plot {i}: {t_line}", *bounds)


def _mnist(train=100, test=40):
    from .programs.morvan_tutorial.mnist_standin import torchvision_modules

    # sklearn unimportable: 401's optional t-SNE plot is left out (it prints its note)
    return lambda lib: {**torchvision_modules(lib, train, test), "sklearn": None, "sklearn.manifold": None}


@pytest.mark.parametrize("name", ["201_torch_numpy", "202_variable", "203_activation", "303_build_nn_quickly"])
def test_morvan_basics_like_torch(tmp_path, monkeypatch, capsys, name):
    """201_torch_numpy (``from_numpy`` / ``.numpy()`` both ways, ``FloatTensor(list)``, abs,
    sin, mean, ``mm``; its last line, ``tensor.dot(tensor)`` on 2-D tensors, raises
    RuntimeError in torch 2.13 and in shardflow alike, after the same printout),
    202_variable (``Variable(tensor, requires_grad=True)``, ``.grad``, ``.data``,
    ``.data.numpy()`` printed), 203_activation (relu / sigmoid / tanh / ``F.softplus`` of a
    linspace through ``Variable`` and ``.data.numpy()``, plotted), 303_build_nn_quickly (a
    Module and the equivalent ``nn.Sequential`` printed). Every printed line and every
    plotted array is torch's (numbers to rtol 1e-5; the printouts are digit for digit)."""
    raises = RuntimeError if name == "201_torch_numpy" else None
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/{name}.py", raises=raises)
    if raises is not None:
        assert str(runs[1][0]) == str(runs[0][0]) == "1D tensors expected, but got 2D and 2D tensors"
    assert len(runs[0][1]) >= 8 or name == "203_activation"
    _same_run(runs, name)


@pytest.mark.parametrize("name", ["301_regression", "302_classification", "403_RNN_regressor", "406_GAN",
                                  "501_why_torch_dynamic_graph", "503_dropout"])
def test_morvan_training_plots_like_torch(tmp_path, monkeypatch, capsys, name):
    """The tutorials that train while they plot, from the same seeds (``manual_seed``;
    ``np.random.seed`` for 406_GAN's ``np.random.uniform`` artist and 501's
    ``np.random.randint`` sequence lengths): 301_regression (``torch.rand`` noise, SGD,
    ``'Loss=%.4f' % loss.data.numpy()``), 302_classification (``torch.normal(2*n_data, 1)``
    clusters, ``.type(torch.LongTensor)``, ``torch.max(out, 1)[1]``), 403_RNN_regressor and
    501 (``nn.RNN`` with the hidden state carried as ``h_state.data``; 501 feeds sequences
    of a random length), 406_GAN (``torch.randn(..., requires_grad=True)`` ideas,
    ``backward(retain_graph=True)``), 503_dropout (two nets, one with ``Dropout(0.5)``:
    torch's masks from the same seed; ``eval()`` / ``train()`` around each plot). Every
    printed line, plotted array and plotted text agrees to rtol 1e-5."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/{name}.py")
    assert any("<array" in line for line in runs[0][2])
    # 403 plots 100 steps of a recurrent net: torch's MKL GEMMs round differently on AVX512
    # than on AVX2 CPUs, 1.6e-6 apart by step 80 (to 1e-6 on AVX2)
    _same_run(runs, name, atol=5e-6 if name == "403_RNN_regressor" else 1e-6)


def test_morvan_save_reload_like_torch(tmp_path, monkeypatch, capsys):
    """304_save_reload: an ``nn.Sequential`` trained by SGD, saved whole (``torch.save(net1,
    'net.pkl')``) and as a ``state_dict``, restored both ways (``torch.load(...,
    weights_only=False)``: torch 2.13 needs it for a whole pickled module, the one change),
    each restored net's predictions plotted: the three plots agree with torch's to rtol
    1e-5, and the two restored nets predict exactly alike."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/304_save_reload.py")
    _same_run(runs, "304_save_reload")
    for _, _, lines, arrays, _ in runs:
        plotted = [a[1] for line, a in zip(lines, arrays) if line.startswith("plt.plot")]
        assert len(plotted) == 3
        # net1's plot is its last prediction, made before its last step; the restored two
        # predict alike
        np.testing.assert_array_equal(plotted[2], plotted[1])
    assert sorted(p.name for p in (tmp_path / "sf").iterdir()) == ["net.pkl", "net_params.pkl"]


def test_morvan_batch_train_like_torch(tmp_path, monkeypatch, capsys):
    """305_batch_train: ``TensorDataset`` + a shuffled ``DataLoader`` with ``num_workers=2``
    (worker processes, as written), 3 epochs of batches printed as NumPy arrays after the
    script's own ``torch.manual_seed(1)``: the same shuffles as torch, line for line."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/305_batch_train.py")
    assert len(runs[0][1]) == 6 and runs[0][1][0].startswith("Epoch:  0 | Step:  0 | batch x:  [")
    _same_run(runs, "305_batch_train", rtol=0, atol=0)


def test_morvan_batch_normalization_like_torch(tmp_path, monkeypatch, capsys):
    """504_batch_normalization: two 8-layer tanh nets initialised by ``init.normal_`` /
    ``init.constant_`` (-0.2 biases), one with ``BatchNorm1d(momentum=0.5)`` after every
    Linear, trained by Adam (lr 0.03) on ``np.random.normal`` data; each epoch both nets are
    evaluated in ``eval()`` mode and every layer's input and pre-activation histogrammed.

    The plain net agrees with torch to rtol 1e-5 everywhere (every printed line, every
    histogram, its final state to 1e-4), and so does everything before training. The
    BatchNorm net does not, and cannot: each Linear bias right before a training-mode
    BatchNorm (and ``bn_input``'s bias, through ``fc0``) has a zero gradient in exact
    arithmetic (the batch mean takes it out), so Adam turns rounding noise into steps of
    about +-lr of either sign (measured after the 6 steps: biases up to 0.24 apart; then
    through the running means, and through near-zero gradients whose sign flips, weights up
    to 2e-3 apart). Its plotted ``eval()`` activations after training are compared as text
    only, and its state within Adam's reach, 2 x 6 steps x lr."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/504_batch_normalization.py")
    lines = runs[0][2]
    trained = [i for i, line in enumerate(lines) if line == "ax[0,0].clear()"][1]  # epoch 1's plots

    def loose(i, line):
        bn_net = line.startswith(("ax[1,", "ax[3,")) and i > trained or "'Batch Normalization'" in line
        return "text" if bn_net else None

    _same_run(runs, "504_batch_normalization", loose=loose)
    (th, *_), (sf, *_) = runs
    for i, (th_net, sf_net) in enumerate(zip(th.nets, sf.nets, strict=True)):
        th_state = {k: v.numpy() for k, v in th_net.state_dict().items()}
        sf_state = {k: v.numpy() for k, v in sf_net.state_dict().items()}
        assert list(sf_state) == list(th_state)
        for k, v in th_state.items():
            if i == 0:
                assert_close(sf_state[k], v, f"plain net {k}", rtol=1e-4, atol=1e-5)
            elif v.dtype.kind == "f":
                assert np.abs(sf_state[k] - v).max() <= 2 * 6 * 0.03, f"BatchNorm net {k}"


def test_morvan_optimizer_comparison_like_torch(tmp_path, monkeypatch, capsys):
    """306_optimizer: four copies of one Net trained side by side on the same shuffled
    batches by SGD, SGD with momentum 0.8, RMSprop(alpha=0.9) and Adam(betas=(0.9, 0.99));
    the noise is ``torch.normal(torch.zeros(*x.size()))`` (std left to its default 1:
    shardflow required std, a TypeError; fixed). Every recorded loss (``loss.data.numpy()``,
    plotted per optimizer) agrees to rtol 1e-5."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/306_optimizer.py")
    assert runs[0][1] == ["Epoch:  0", "Epoch:  1"]
    assert sum(line.startswith("plt.plot(<array (6,)>") for line in runs[0][2]) == 4
    _same_run(runs, "306_optimizer")


@pytest.mark.parametrize("name, train, test", [("401_CNN", 50, 20), ("402_RNN_classifier", 64, 20),
                                               ("404_autoencoder", 128, 40)])
def test_morvan_mnist_like_torch(tmp_path, monkeypatch, capsys, name, train, test):
    """The MNIST tutorials on the synthetic stand-in (``mnist_standin.py``: torchvision's
    deprecated ``train_data`` / ``train_labels`` / ``test_data`` / ``test_labels`` uint8 and
    int64 tensors, ``'%i' % train_labels[0]``, ``.type(torch.FloatTensor)[:2000]/255.``):
    401_CNN (two Conv2d/ReLU/MaxPool2d blocks, Adam, test accuracy from ``torch.max(out,
    1)[1].data.numpy()``; sklearn made unimportable, so its t-SNE plot is left out and its
    note printed), 402_RNN_classifier (an ``nn.LSTM(batch_first=True)`` over image rows,
    ``self.rnn(x, None)``), 404_autoencoder (a Tanh encoder to 3 features and a Sigmoid
    decoder, the decoded images and the 3-D scatter's ``ax.text`` per point plotted). From
    the same seed (torch's initial weights and shuffles) every printed line and plotted
    array agrees to rtol 1e-5."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/{name}.py", modules=_mnist(train, test))
    assert "prediction number" in runs[0][1][-2] if name != "404_autoencoder" else "train loss" in runs[0][1][-1]
    _same_run(runs, name)


def test_morvan_conditional_gan_like_torch(tmp_path, monkeypatch, capsys):
    """406_conditional_GAN as written raises in torch 2.13 on its first step
    (``opt_D.step()`` changes D's weights in place before ``G_loss.backward()`` needs them):
    shardflow raises the same RuntimeError (its version counters; torch names the [128, 1]
    transposed weight its mm saved, shardflow the (1, 128) weight its addmm saved).
    406_conditional_GAN_fixed (G's backward first, ``backward(inputs=list(G.parameters()))``
    so that D's step sees D_loss's gradient alone) then trains 201 steps: every plotted
    painting and text (``'Class = %i' % int(labels.data[0, 0])``) agrees to rtol 1e-5."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/406_conditional_GAN.py", raises=RuntimeError)
    th_error, sf_error = str(runs[0][0]), str(runs[1][0])
    assert "modified by an inplace operation" in th_error and "modified by an inplace operation" in sf_error
    runs = _run(tmp_path / "fixed", monkeypatch, capsys, f"{MORVAN}/406_conditional_GAN_fixed.py")
    assert sum(line.startswith("plt.text") for line in runs[0][2]) == 6
    _same_run(runs, "406_conditional_GAN_fixed")


def test_morvan_dqn_like_torch(tmp_path, monkeypatch, capsys):
    """405_DQN_Reinforcement_learning on CartPole (gym 0.8's API over tiny_gym's dynamics,
    ``old_gym_standin.py``): two Nets initialised by ``weight.data.normal_(0, 0.1)`` (torch's
    draws from the same seed), epsilon-greedy actions from ``np.random.uniform`` and
    ``torch.max(actions_value, 1)[1].data.numpy()[0]``, a NumPy replay memory sampled by
    ``np.random.choice``, ``gather``, ``q_next.max(1)[0].view(...)``, MSELoss, Adam, the
    target net refreshed by ``load_state_dict(state_dict())``. The same actions, so the
    same episodes: the replay memories are equal, every printed episode return is torch's,
    and both nets agree to 1e-5 after the 44 learning steps."""
    from .programs.morvan_tutorial.old_gym_standin import gym_module

    runs = _run(tmp_path, monkeypatch, capsys, f"{MORVAN}/405_DQN_Reinforcement_learning.py",
                modules=lambda lib: {"gym": gym_module(0)})
    (th, th_out, *_), (sf, *_) = runs
    assert sum(line.startswith("Ep: ") for line in th_out) >= 2 and th.dqn.learn_step_counter == 44
    _same_run(runs, "405_DQN")
    np.testing.assert_array_equal(sf.dqn.memory, th.dqn.memory)
    for net in ("eval_net", "target_net"):
        for k, v in getattr(th.dqn, net).state_dict().items():
            assert_close(getattr(sf.dqn, net).state_dict()[k].numpy(), v.numpy(), f"{net} {k}")


# hunkim/PyTorchZeroToAll -------------------------------------------------------------------

ZERO = "zero_to_all"


def _diabetes_files() -> dict:
    """``data/diabetes.csv`` and ``data/diabetes.csv.gz`` as the lectures read them: the real
    file's layout (8 features in [-1, 1], a 0/1 label; comma-separated), 40 made-up rows."""
    import gzip
    import io

    rng = np.random.default_rng(7)
    xy = np.concatenate([rng.uniform(-1, 1, (40, 8)), rng.random((40, 1)) < 0.4], axis=1)
    text = io.StringIO()
    np.savetxt(text, xy, delimiter=",", fmt="%.6f")
    data = text.getvalue().encode()
    return {"data/diabetes.csv": data, "data/diabetes.csv.gz": gzip.compress(data, mtime=0)}


@pytest.mark.parametrize("name", ["01_basics", "02_manual_gradient", "03_auto_gradient"])
def test_zero_to_all_gradient_basics_like_torch(tmp_path, monkeypatch, capsys, name):
    """Lectures 1-3: the loss sweep over ``w`` and the gradient by hand (plain NumPy and
    Python: the same printout and plots in both runs, the harness's baseline), then
    03_auto_gradient: ``torch.tensor([1.0], requires_grad=True)`` times Python floats,
    ``backward()`` per sample, ``w.grad.item()``, ``w.data = w.data - 0.01 * ...``,
    ``w.grad.data.zero_()``, ``f"{l.item()}"``: every line torch's (rtol 1e-5: a loss's
    float32 last bit, printed as a Python float's 17 digits)."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/{name}.py")
    assert len(runs[0][1]) >= 40
    _same_run(runs, name)


@pytest.mark.parametrize("name, lines", [("05_linear_regression", 51), ("06_logistic_regression", 52),
                                         ("07_diabets_logistic", 22), ("08_2_dataset_loade_logistic", 4)])
def test_zero_to_all_regressions_like_torch(tmp_path, monkeypatch, capsys, name, lines):
    """Lectures 5-8: ``Variable(torch.Tensor([[1.0], ...]))`` data, a Linear model trained by
    SGD under ``MSELoss(size_average=False)`` (05) or ``BCELoss(size_average=True)`` (06-08:
    both warn torch's deprecation, the same message), ``F.sigmoid`` (06), the printed
    ``model(x).data[0][0]`` and ``... > 0.5`` tensors; 07 reads ``np.loadtxt`` of the
    diabetes CSV (a synthetic stand-in) through ``torch.from_numpy(xy[:, [-1]])``, 08_2 the
    same through a ``Dataset`` subclass and a shuffled ``DataLoader``. From the same seed
    (torch's initial weights and shuffles) every printed loss agrees to rtol 1e-5."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/{name}.py", files=_diabetes_files())
    assert len(runs[0][1]) == lines
    assert any("size_average and reduce args will be deprecated" in w for w in runs[0][4]) or name == "07_diabets_logistic"
    _same_run(runs, name)


def test_zero_to_all_dataset_loader_like_torch(tmp_path, monkeypatch, capsys):
    """08_1_dataset_loader as written: the diabetes ``Dataset`` read from the gzip CSV, a
    shuffled ``DataLoader(batch_size=32, num_workers=2)`` (worker processes), 2 epochs of
    batches printed whole (``inputs.data`` / ``labels.data``): torch's shuffles and
    tensor printout, line for line."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/08_1_dataset_loader.py", files=_diabetes_files())
    assert sum(" inputs tensor(" in line for line in runs[0][1]) == 4
    _same_run(runs, "08_1_dataset_loader", rtol=0, atol=0)


def test_zero_to_all_softmax_loss_like_torch(tmp_path, monkeypatch, capsys):
    """09_01_softmax_loss: ``CrossEntropyLoss`` of ``Variable(torch.randn(3, 5),
    requires_grad=True)`` (torch's draws from the same seed) and a LongTensor target,
    ``backward()``, the ``.data`` and ``.size()`` of all three printed (``torch.Size([])``
    for the loss), then NumPy's cross entropy: torch's printout digit for digit."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/09_01_softmax_loss.py", modules=_mnist())
    assert "torch.Size([3, 5]) torch.Size([3]) torch.Size([])" in runs[0][1]
    _same_run(runs, "09_01_softmax_loss", rtol=0, atol=0)


@pytest.mark.parametrize("name, train, test", [("09_2_softmax_mnist", 64, 20), ("10_1_cnn_mnist", 64, 20),
                                               ("11_1_toy_inception_mnist", 32, 10)])
def test_zero_to_all_mnist_like_torch(tmp_path, monkeypatch, capsys, name, train, test):
    """Lectures 9-11 on the MNIST stand-in: 09_2 (a 5-layer MLP, ``cuda.is_available()``,
    ``model.to(device)``, ``f"{correct}"`` of a tensor sum, ``divmod`` of times: masked),
    10_1 (Conv2d/MaxPool2d, ``F.log_softmax(x)`` without dim and ``Variable(data,
    volatile=True)``: torch's two deprecation warnings, repeated as torch repeats them;
    ``nll_loss(size_average=False).data`` summed as a tensor and formatted with
    ``{:.4f}``), 11_1 (the toy Inception module: four branches ``torch.cat``'d, avg_pool2d
    with padding). SGD with momentum from torch's initial weights: every printed line agrees
    (losses to rtol 1e-5; the test loss printed with 4 decimals to atol 1e-4), and the
    warnings are torch's, in torch's order."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/{name}.py", modules=_mnist(train, test))
    if name == "10_1_cnn_mnist":
        assert any("volatile was removed" in w for w in runs[0][4])

    def mask(lines):
        return [line.split(":")[0] if line.startswith(("Training time", "Testing time", "Total Time")) else line
                for line in lines]

    for run in runs:
        run[1][:] = mask(run[1])
    assert any("Test set: Average loss" in line for line in runs[0][1])
    _same_run(runs, name, atol=1e-4)


@pytest.mark.parametrize("name", ["12_2_hello_rnn", "12_4_hello_rnn_emb"])
def test_zero_to_all_hello_rnn_like_torch(tmp_path, monkeypatch, capsys, name):
    """Lecture 12's "hihell -> ihello": 12_2 feeds one-hot characters one at a time through
    ``nn.RNN(batch_first=True)`` with the hidden state carried (``idx2char[idx.data[0]]``
    indexes a list with a tensor, ``torch.LongTensor([label])`` of a 0-d tensor, a loss
    summed from ``0`` and printed with ``%1.3f``: torch's "Converting a tensor with
    requires_grad=True to a scalar" warning), 12_4 an ``nn.Embedding`` + RNN + Linear over
    the whole word. Both after the script's own ``torch.manual_seed(777)``: every predicted
    string and loss is torch's. Both warn always (``set_warn_always(True)``): the warning is
    once per process, and another test in this process may have used its once already."""
    import torch

    import shardflow

    try:
        for lib in (torch, shardflow):
            lib.set_warn_always(True)
        runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/{name}.py")
    finally:
        for lib in (torch, shardflow):
            lib.set_warn_always(False)
    assert runs[0][1][-1] == "Learning finished!"
    _same_run(runs, name)


def test_zero_to_all_pack_pad_like_torch(tmp_path, monkeypatch, capsys):
    """13_3_pack_pad: a padded batch made with ``torch.zeros((3, seq_lengths.max()))`` (a
    tensor in the size: shardflow raised TypeError; fixed), filled by slice assignment,
    sorted with ``sort(0, descending=True)``, embedded, ``pack_padded_sequence`` with NumPy
    lengths, an LSTM over the packed batch, ``pad_packed_sequence``: every printed tensor is
    torch's (5 significant digits: one last digit may round the other way, rtol 5e-5)."""
    runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/13_3_pack_pad.py")
    assert runs[0][1][0].startswith("vectorized_seqs [[")
    assert any(line.startswith("Last output torch.Size([3, 5]) tensor([[") for line in runs[0][1])
    _same_run(runs, "13_3_pack_pad", rtol=5e-5)


# short lines: the attention decoder scores every encoder step for every decoder step
SHAKESPEARE = "All: Speak, speak.\n\nWe know't, we know't.\nIs't a verdict?\n"


def _seq2seq_siblings(lib):
    """``text_loader`` and ``seq2seq_models`` (the scripts' sibling imports), loaded over
    ``lib``'s framework."""
    from shardflow.testing.parity import load_torch_file

    use_sf = lib.__name__ == "shardflow"
    return {name: load_torch_file(HERE / ZERO / f"{name}.py", use_shardflow=use_sf,
                                  name=f"zero_to_all_{name}_{'sf' if use_sf else 'th'}")
            for name in ("text_loader", "seq2seq_models")}


@pytest.mark.parametrize("name", ["14_1_seq2seq", "14_2_seq2seq_att"])
def test_zero_to_all_seq2seq_like_torch(tmp_path, monkeypatch, capsys, name):
    """Lecture 14's character seq2seq on a 3-line ``shakespeare.txt.gz``: ``seq2seq_models``'
    GRU encoder and decoder (14_2: the attention decoder, its scores written one by one into
    ``torch.zeros(seq_len)``, ``torch.dot``, ``F.softmax`` without dim, ``bmm``; a 1-layer
    GRU with ``dropout=0.1``: torch's warning), teacher forcing one character at a time,
    ``loss.item()`` (``loss.data[0]`` as written is an IndexError in torch 2.13 too),
    ``translate`` sampling 100 characters by ``torch.multinomial(output_dist, 1)[0]`` and
    ``chr()`` of the 0-d tensor. From the same seed (torch's initial weights, shuffles and
    multinomial draws) every printed line is torch's: the encoder outputs, the losses (rtol
    1e-5) and every sampled character."""
    import gzip

    runs = _run(tmp_path, monkeypatch, capsys, f"{ZERO}/{name}.py", modules=_seq2seq_siblings,
                files={"shakespeare.txt.gz": gzip.compress(SHAKESPEARE.encode(), mtime=0)})
    assert any(line.startswith("thisissungkim.iloveyou.") or "thisissungkim.iloveyou." in line for line in runs[0][1])
    _same_run(runs, name)
