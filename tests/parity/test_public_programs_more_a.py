"""More public PyTorch programs (tests/parity/programs/) run as scripts on torch and, with
only their imports changed, on shardflow, from the same start: pytorch/examples'
word_language_model (LSTM and Transformer), time_sequence_prediction (LSTMCell + LBFGS)
and dcgan. The losses must match step by step (docs/COMPAT.md, "Public programs"; the
harness is tests/parity/programs/_harness.py).
"""

import re
from pathlib import Path

import numpy as np
import pytest
import torch

import shardflow
from shardflow.testing.parity import load_torch_file

from .programs._harness import (
    assert_close,
    assert_same_state,
    dropout_off,
    record_module_outputs,
    run_script,
    same_draws,
    same_weights,
)

PROGRAMS = Path(__file__).parent / "programs"


pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/parity/conftest.py


def _write_corpus(root: Path) -> None:
    """train/valid/test.txt in wikitext's layout: lines drawn from five fixed sentences
    (learnable: the next word is mostly determined), enough for 3 training windows of
    bptt 8 x batch 4 and 2 evaluation windows of batch 10 (data.Corpus adds <eos>)."""
    rng = np.random.default_rng(0)
    sentences = ["the cat sat on a mat", "my dog ran to the red hat", "a big cat ran",
                 "the dog sat on my big red mat", "and the hat sat"]
    root.mkdir()
    for name, n_lines in (("train.txt", 12), ("valid.txt", 18), ("test.txt", 18)):
        (root / name).write_text("\n".join(rng.choice(sentences, n_lines)) + "\n")


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # torch's fast-path note (Transformer)
# the mask's log(tril(ones)): shardflow's import-time filter for NumPy's floating-point
# warnings is not in force inside pytest (docs/COMPAT.md, "NumPy's floating-point warnings");
# a plain run is silent, as torch
@pytest.mark.filterwarnings("ignore:divide by zero encountered in log")
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "Transformer"])
def test_word_language_model_trains_like_torch(kind, tmp_path, monkeypatch):
    """examples/word_language_model's main.py run as a script (`--model KIND`, 3 epochs of
    3 bptt windows, lr 20 and clip 0.25 as the original; GRU with `--tied` weights and lr 5,
    where 20 diverges) beside its model.py and data.py, unchanged, on a synthetic corpus:
    repackage_hidden, clip_grad_norm_, the hand-written SGD step
    `p.data.add_(p.grad, alpha=-lr)`, evaluate under no_grad, the lr annealing,
    torch.save(model) of the best model and its reload for the test loss; then generate.py
    samples 30 words from that saved model (torch.multinomial and the first word's
    torch.randint get the same NumPy draws in both runs). Same weights through the model
    class; `--dropout 0` (and p=0 on nn.Transformer's own layers, whose dropout the example
    leaves at its default 0.1): its masks are random.

    Every NLLLoss (train and evaluation) to 1e-5, the final test loss, the reloaded model
    and the same generated text. (RNN_TANH, not run here, drifts to 1.1e-5 by step 8 at lr
    20: torch itself moves by 1.8e-5 when its initial weights get 1e-7 relative noise.)"""
    here = PROGRAMS / "word_language_model"
    _write_corpus(tmp_path / "corpus")
    mods = {}
    for name, use_sf in (("torch", False), ("shardflow", True)):
        mods[name] = {m: load_torch_file(here / f"{m}.py", use_shardflow=use_sf, name=f"wlm_{m}_{name}")
                      for m in ("model", "data")}
    same_weights(mods["torch"]["model"], mods["shardflow"]["model"], "RNNModel", "TransformerModel",
                 prepare=dropout_off)
    argv = ["--data", str(tmp_path / "corpus"), "--model", kind, "--emsize", "16", "--nhid", "16",
            "--nlayers", "2", "--nhead", "2", "--epochs", "3", "--batch_size", "4", "--bptt", "8",
            "--dropout", "0", "--log-interval", "2"] + (["--tied", "--lr", "5"] if kind == "GRU" else [])
    runs = {}
    for name, use_sf in (("torch", False), ("shardflow", True)):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        losses = []
        script = run_script(here / "main.py", use_sf, argv, modules=mods[name],
                            after_imports=lambda g, losses=losses: record_module_outputs(g, "nn", "NLLLoss", losses))
        # generate.py samples 30 words from the saved model (the same NumPy draws in both runs)
        run_script(here / "generate.py", use_sf, ["--data", str(tmp_path / "corpus"), "--words", "30"],
                   modules={"data": mods[name]["data"]},
                   after_imports=lambda g: same_draws((g,), ["randint", "multinomial"]))
        runs[name] = script, losses
    (th, th_losses), (sf, sf_losses) = runs["torch"], runs["shardflow"]
    th_words = (tmp_path / "torch" / "generated.txt").read_text()
    assert (tmp_path / "shardflow" / "generated.txt").read_text() == th_words and len(th_words.split()) == 30
    # (training?, loss): 3 training windows then 2 validation windows per epoch, 2 test windows
    expected = ([True] * 3 + [False] * 2) * 3 + [False] * 2
    assert [t for t, _ in sf_losses] == [t for t, _ in th_losses] == expected
    assert_close([v for _, v in sf_losses], [v for _, v in th_losses], "train/valid/test NLL losses")
    assert_close([sf.best_val_loss, sf.test_loss, sf.lr], [th.best_val_loss, th.test_loss, th.lr],
                 "best valid loss, test loss, annealed lr")
    assert type(sf.model).__name__ == type(th.model).__name__  # the reloaded whole module
    assert_same_state(sf.model, th.model, kind)
    # it does learn: the best validation loss (what the program kept) is below epoch 1's,
    # the mean of its windows' losses weighted by their lengths as evaluate() weighs them
    n = len(th.val_data)
    lengths = [min(8, n - 1 - i) for i in range(0, n - 1, 8)]
    first_val = sum(k * v for k, (_, v) in zip(lengths, th_losses[3:5], strict=True)) / (n - 1)
    assert th.best_val_loss < first_val


def _run_main_block(module, use_shardflow: bool, argv, monkeypatch) -> None:
    """Run the ``if __name__ == '__main__':`` part of a script that :func:`run_script`
    loaded with ``as_main=False``, in that script's globals, as ``python path ARGV`` would:
    the model class the script defines then exists (so the test can give it torch's weights)
    before the script's main part builds the model."""
    import ast
    import sys

    from shardflow.testing.parity import rewrite_imports

    source = Path(module.__file__).read_text()
    tree = ast.parse(rewrite_imports(source) if use_shardflow else source)
    (main,) = [node for node in tree.body if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
    monkeypatch.setattr(sys, "argv", [module.__file__, *argv])
    exec(compile(ast.Module(body=main.body, type_ignores=[]), module.__file__, "exec"), module.__dict__)


def test_time_sequence_prediction_fits_like_torch(tmp_path, monkeypatch):
    """examples/time_sequence_prediction run as its two scripts: generate_sine_wave.py
    (torch.save of a NumPy array, read back by the same framework) then train.py
    (`--steps 2`): two LSTMCells in float64 fitted by LBFGS with a closure (up to 20
    evaluations per step), predicting 20 steps past the test waves and plotting them.
    Same weights through Sequence (torch's float32 initial values, then the program's
    seq.double()): train.py is loaded without its main part, Sequence gets torch's weights,
    then its main part runs. Float64 throughout, so every closure loss and test loss to
    1e-9, the predicted waves and the fitted weights. Two steps because the fit is chaotic
    later on: torch against itself with 1e-15 relative noise on its float64 weights differs
    by 4e-10 over the first 60 closure losses and by 2% by step 8 (shardflow against torch:
    4e-10 and 2.4%; measured)."""
    here = PROGRAMS / "time_sequence_prediction"
    runs, scripts = {}, {}
    for name, use_sf in (("torch", False), ("shardflow", True)):
        losses = []
        scripts[name] = run_script(here / "train.py", use_sf, as_main=False,
                                   after_imports=lambda g, losses=losses: record_module_outputs(g, "nn", "MSELoss", losses))
        runs[name] = losses
    same_weights(scripts["torch"], scripts["shardflow"], "Sequence")
    for name, use_sf in (("torch", False), ("shardflow", True)):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        run_script(here / "generate_sine_wave.py", use_sf)
        _run_main_block(scripts[name], use_sf, ["--steps", "2"], monkeypatch)
        assert (tmp_path / name / "predict1.pdf").exists()
    (th, th_losses), (sf, sf_losses) = (scripts["torch"], runs["torch"]), (scripts["shardflow"], runs["shardflow"])
    assert [t for t, _ in sf_losses] == [t for t, _ in th_losses]
    flags = [t for t, _ in th_losses]
    assert flags.count(False) == 2 and len(flags) > 10  # a test loss per step, many closure calls
    assert_close([v for _, v in sf_losses], [v for _, v in th_losses], "closure and test MSE losses", rtol=1e-9, atol=0)
    assert_close(sf.y, th.y, "predicted waves", rtol=1e-9, atol=1e-12)
    assert_same_state(sf.seq, th.seq, "Sequence", rtol=1e-9, atol=1e-12)
    assert th_losses[-1][1] < th_losses[0][1]  # it does fit


def test_dcgan_trains_like_torch(tmp_path, monkeypatch, capsys):
    """examples/dcgan's main.py run as a script (`--dataset fake --imageSize 64 --nz 8
    --ngf 4 --ndf 4 --batchSize 4 --niter 3 --workers 2`, its default worker count; 64x64
    is the only size its layers allow): both runs start from the --netG / --netD
    checkpoints that a first torch run (`--niter 0`, the program's own weights_init through
    apply) wrote, read by the program's own load_state_dict(torch.load(...)). The noise
    (fixed_noise and each step's torch.randn) gets the same NumPy draws in both runs. The
    shuffled loader has one batch per epoch (BatchNorm and the mean losses do not depend on
    the order). Every BCELoss (errD_real, errD_fake, errG) to 1e-5 and the printed
    Loss_D, Loss_G, D(x), D(G(z)); the fixed-noise samples (made in training mode:
    BatchNorm's running statistics move), the per-epoch checkpoints and the final models."""
    here = PROGRAMS / "dcgan.py"
    argv = ["--dataset", "fake", "--imageSize", "64", "--nz", "8", "--ngf", "4", "--ndf", "4",
            "--batchSize", "4", "--workers", "2", "--manualSeed", "1"]
    (tmp_path / "init").mkdir()
    monkeypatch.chdir(tmp_path / "init")
    init = run_script(here, False, argv + ["--niter", "0"])
    torch.save(init.netG.state_dict(), tmp_path / "netG0.pth")
    torch.save(init.netD.state_dict(), tmp_path / "netD0.pth")
    argv += ["--niter", "3", "--netG", str(tmp_path / "netG0.pth"), "--netD", str(tmp_path / "netD0.pth")]
    runs = {}
    for name, use_sf in (("torch", False), ("shardflow", True)):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        losses = []

        def after_imports(g, losses=losses):
            same_draws((g,), ["randn"])
            record_module_outputs(g, "nn", "BCELoss", losses)

        capsys.readouterr()
        script = run_script(here, use_sf, argv, after_imports=after_imports)
        printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
        runs[name] = script, losses, printed
    (th, th_losses, th_printed), (sf, sf_losses, sf_printed) = runs["torch"], runs["shardflow"]
    assert len(sf_losses) == len(th_losses) == 3 * 3 and all(t for t, _ in th_losses + sf_losses)
    assert_close([v for _, v in sf_losses], [v for _, v in th_losses], "errD_real, errD_fake, errG per step")
    assert len(sf_printed) == len(th_printed) == 3
    numbers = [[float(x) for x in re.findall(r"-?\d+\.\d+", line)] for line in th_printed + sf_printed]
    assert all(len(n) == 5 for n in numbers), numbers
    assert_close(numbers[3:], numbers[:3], "printed Loss_D, Loss_G, D(x), D(G(z)) (%.4f)", rtol=0, atol=1e-4)
    assert list(sf.saved_images) == list(th.saved_images)
    for path, image in th.saved_images.items():
        th_image, sf_image = image.numpy(), sf.saved_images[path].numpy()
        if path.endswith("real_samples.png"):  # the shuffled batch: the same images, in another order
            th_image, sf_image = (a[np.argsort(a.reshape(len(a), -1).sum(1))] for a in (th_image, sf_image))
        assert_close(sf_image, th_image, path, atol=1e-5)
    for epoch in range(3):
        for net in ("netG", "netD"):
            th_state = torch.load(tmp_path / "torch" / f"{net}_epoch_{epoch}.pth")
            sf_state = shardflow.load(tmp_path / "shardflow" / f"{net}_epoch_{epoch}.pth")
            assert list(sf_state) == list(th_state)
            for k, v in th_state.items():
                assert_close(sf_state[k].numpy(), v.numpy(), f"{net} epoch {epoch}: {k}", rtol=1e-4, atol=1e-5)
    assert_same_state(sf.netG, th.netG, "Generator")
    assert_same_state(sf.netD, th.netD, "Discriminator")
