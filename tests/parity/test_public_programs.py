"""Public PyTorch programs (tests/parity/programs/) run on torch and, with only their
imports changed, on shardflow, in one process each, from the same initial weights: the
losses must match step by step (issue 27; the table is in docs/COMPAT.md, "Public
programs").

Tolerances: float32 programs run a few steps, so the losses agree to rtol 1e-5 (a few ulps
of float32 per op, grown by the steps); where a program's own randomness would make the
runs differ (dropout, sampling), the test says how it is made equal (``_harness``).
"""

import pytest
import torch

from .programs._harness import assert_close, assert_same_state, dropout_off, load_pair, same_weights


@pytest.fixture(autouse=True)
def _torch_single_thread():
    """Small programs of many tiny ops: torch's intra-op threads only add synchronisation
    on a loaded 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_mnist_trains_like_torch():
    """examples/mnist: Adadelta + StepLR over 2 epochs of 3 batches; dropout p=0 (its masks
    are random)."""
    th, sf = load_pair("mnist")
    same_weights(th, sf, "Net", prepare=dropout_off)
    th_model, th_train, th_test = th.main([])
    sf_model, sf_train, sf_test = sf.main([])
    assert len(sf_train) == len(th_train) == 6
    assert_close(sf_train, th_train, "train losses")
    assert_close([t[0] for t in sf_test], [t[0] for t in th_test], "test losses")
    assert [t[1] for t in sf_test] == [t[1] for t in th_test]  # correct predictions
    assert_same_state(sf_model, th_model, "Net")
    assert th_train[-1] < th_train[0]  # it does learn (the comparison is not of constants)


@pytest.mark.filterwarnings("ignore:dropout2d. Received a 2-D input")  # torch's note, the program's use
def test_mnist_rnn_trains_like_torch():
    """examples/mnist_rnn: LSTM + BatchNorm1d + Dropout2d, Adadelta + StepLR, shuffled
    loaders of one batch per epoch; dropout p=0 (its masks are random)."""
    th, sf = load_pair("mnist_rnn")
    same_weights(th, sf, "Net", prepare=dropout_off)
    th_model, th_train, th_test = th.main([])
    sf_model, sf_train, sf_test = sf.main([])
    assert len(sf_train) == len(th_train) == 3
    assert_close(sf_train, th_train, "train losses")
    assert_close(sf_test, th_test, "test losses")
    assert_same_state(sf_model, th_model, "Net")
    assert th_train[-1] < th_train[0]
