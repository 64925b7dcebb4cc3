"""PyTorch example programs run on shardflow with only their imports changed: the word
language model (LSTM / GRU with tied weights / tanh RNN / nn.Transformer subclass, trained
with clip_grad_norm_ and hand-written SGD), DCGAN (ConvTranspose2d generator, BatchNorm,
two Adam optimizers, BCELoss, DataLoader) and the time-sequence LSTMCell fitted by LBFGS.

Each program is built with torch and with shardflow, torch's weights are copied over, and
a few training steps must give the same losses and the same final state (float32 tolerance;
the LBFGS program runs in float64 as the original does, so it is held to 1e-9).
"""

from pathlib import Path

import numpy as np
import pytest
import torch

import shardflow
from shardflow.testing.parity import load_torch_file

HERE = Path(__file__).parent / "torch_models"

pytestmark = [
    pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),  # torch's fast-path note
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log"),  # log(tril(ones))
]


@pytest.fixture(autouse=True)
def _single_thread(torch_single_thread):
    """These programs run thousands of tiny ops: torch's intra-op threads only add
    synchronisation, which on a loaded 2-core machine made the LBFGS program 10x slower
    (the fixture is tests/parity/conftest.py's)."""


def _programs(name):
    return (load_torch_file(HERE / f"{name}.py", use_shardflow=False),
            load_torch_file(HERE / f"{name}.py", use_shardflow=True))


def _copy_weights(th_model, sf_model):
    sf_model.load_state_dict({k: shardflow.tensor(v.detach().numpy())
                              for k, v in th_model.state_dict().items()})


def _assert_same_state(sf_model, th_model, what, rtol, atol):
    th_state = th_model.state_dict()
    sf_state = sf_model.state_dict()
    assert list(sf_state) == list(th_state), what
    for k, v in sf_state.items():
        np.testing.assert_allclose(np.asarray(v.numpy(), np.float64), np.asarray(th_state[k].numpy(), np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{what}: {k}")


@pytest.mark.parametrize("model", ["LSTM", "GRU", "RNN_TANH", "Transformer"])
def test_word_language_model_trains_like_torch(model):
    th_prog, sf_prog = _programs("word_language_model")
    ntokens = 33
    ids = np.random.default_rng(0).integers(0, ntokens, 4 * 8 * 4 + 1)  # 4 bptt windows of 8
    torch.manual_seed(0)
    th_model, sf_model = th_prog.build(model, ntokens), sf_prog.build(model, ntokens)
    _copy_weights(th_model, sf_model)
    th_data = th_prog.batchify(torch.from_numpy(ids), 4)
    sf_data = sf_prog.batchify(shardflow.from_numpy(ids), 4)
    th_losses = th_prog.train(th_model, th_data, ntokens)
    sf_losses = sf_prog.train(sf_model, sf_data, ntokens)
    assert len(sf_losses) == len(th_losses) == 4
    np.testing.assert_allclose(sf_losses, th_losses, rtol=1e-5, atol=1e-5)
    _assert_same_state(sf_model, th_model, model, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sf_prog.evaluate(sf_model, sf_data, ntokens),
                               th_prog.evaluate(th_model, th_data, ntokens), rtol=1e-5)


def test_dcgan_trains_like_torch():
    th_prog, sf_prog = _programs("dcgan")
    rng = np.random.default_rng(0)
    images = np.tanh(rng.standard_normal((12, 3, 64, 64))).astype(np.float32)
    noises = rng.standard_normal((12, th_prog.nz, 1, 1)).astype(np.float32)
    torch.manual_seed(0)
    (th_G, th_D), (sf_G, sf_D) = th_prog.build(), sf_prog.build()
    _copy_weights(th_G, sf_G)
    _copy_weights(th_D, sf_D)
    th_hist = th_prog.train(th_G, th_D, images, noises)
    sf_hist = sf_prog.train(sf_G, sf_D, images, noises)
    assert len(sf_hist) == len(th_hist) == 3
    # (errD, errG, D(x), D(G(z)) before and after D's step) per iteration
    np.testing.assert_allclose(sf_hist, th_hist, rtol=1e-5, atol=1e-6)
    _assert_same_state(sf_G, th_G, "generator", rtol=1e-4, atol=1e-5)
    _assert_same_state(sf_D, th_D, "discriminator", rtol=1e-4, atol=1e-5)


def test_time_sequence_prediction_lbfgs_fits_like_torch():
    th_prog, sf_prog = _programs("time_sequence_prediction")
    data = th_prog.generate_sine_wave()
    torch.manual_seed(0)
    th_seq, sf_seq = th_prog.build(), sf_prog.build()
    _copy_weights(th_seq, sf_seq)
    th_train, th_test, th_pred = th_prog.train(th_seq, data)
    sf_train, sf_test, sf_pred = sf_prog.train(sf_seq, data)
    assert len(sf_train) == len(th_train) > 1  # every closure evaluation of LBFGS
    np.testing.assert_allclose(sf_train, th_train, rtol=1e-9)
    np.testing.assert_allclose(sf_test, th_test, rtol=1e-9)
    np.testing.assert_allclose(sf_pred, th_pred, rtol=1e-9, atol=1e-12)
    _assert_same_state(sf_seq, th_seq, "Sequence", rtol=1e-9, atol=1e-12)
