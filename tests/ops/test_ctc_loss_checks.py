"""``ctc_loss``'s argument checks and an input length of 0, against torch (session 40,
compat-audio): torch accepts an empty input (loss 0 for an empty target, ``inf`` otherwise)
where shardflow raised, and shardflow's refusals now carry torch's messages."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = np.random.default_rng(1).standard_normal((6, 3, 5))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_input_length_zero_like_torch(reduction, zero_infinity):
    got = {}
    for lib in (torch, sf):
        x = lib.tensor(X, requires_grad=True)  # float64
        loss = lib.nn.functional.ctc_loss(x.log_softmax(2), lib.tensor([[1, 2, 0], [3, 3, 0], [2, 0, 0]]),
                                          lib.tensor([0, 5, 0]), lib.tensor([0, 2, 1]), reduction=reduction,
                                          zero_infinity=zero_infinity)
        (loss * lib.isfinite(loss)).sum().backward()
        got[lib] = (loss.detach().numpy(), x.grad.numpy())
    np.testing.assert_allclose(got[sf][0], got[torch][0], rtol=1e-12)
    np.testing.assert_allclose(got[sf][1], got[torch][1], rtol=1e-12, atol=1e-12)
    if reduction == "none":
        assert np.signbit(got[sf][0][0]) == np.signbit(got[torch][0][0])  # -0.0, as torch's
        assert np.isinf(got[torch][0][2]) != zero_infinity
    assert not got[torch][1][:, 0].any() and not got[torch][1][:, 2].any()


CASES = {
    "input longer than log_probs": ([[1, 2, 0]] * 3, [7, 5, 4], [2, 2, 2]),
    "negative input length": ([[1, 2, 0]] * 3, [-1, 5, 4], [0, 2, 2]),
    "targets too short": ([[1, 2, 0]] * 3, [6, 5, 4], [2, 4, 2]),
    "input_lengths size": ([[1, 2, 0]] * 3, [6, 5], [2, 2, 2]),
    "target_lengths size": ([[1, 2, 0]] * 3, [6, 5, 4], [2, 2]),
    "negative target length": ([[1, 2, 0]] * 3, [6, 5, 4], [2, -1, 2]),
    "concatenated sum": ([1, 2, 3, 4], [6, 5, 4], [2, 2, 2]),
    "target rows": ([[1, 2, 0]] * 2, [6, 5, 4], [2, 2, 2]),
    "float lengths": ([[1, 2, 0]] * 3, [6.0, 5, 4], [2, 2, 2]),
    "3-d targets": ([[[1, 2, 0]]] * 3, [6, 5, 4], [2, 2, 2]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_refusals_carry_torchs_messages(name):
    targets, in_len, tgt_len = CASES[name]
    messages = []
    for lib in (torch, sf):
        with pytest.raises(RuntimeError) as caught:
            lib.nn.functional.ctc_loss(lib.tensor(X).log_softmax(2), lib.tensor(targets), lib.tensor(in_len),
                                       lib.tensor(tgt_len))
        messages.append(str(caught.value))
    assert messages[1] == messages[0]


def test_blank_out_of_range_message_like_torch():
    for blank in (5, -1):
        for lib in (torch, sf):
            with pytest.raises(RuntimeError, match=r"^blank must be in label range$"):
                lib.nn.functional.ctc_loss(lib.tensor(X).log_softmax(2), lib.tensor([[1, 2]] * 3),
                                           lib.tensor([6, 5, 4]), lib.tensor([2, 2, 2]), blank=blank)


@pytest.mark.parametrize("args", [(), (0,), (0, 0), (0, 1), (0, 2), (0, 1, True)])
def test_top_level_ctc_loss_takes_torchs_integer_reduction(args):
    """``torch.ctc_loss`` is aten's: an integer reduction code, per-sample losses when it is
    omitted; shardflow's was ``F.ctc_loss`` (a string, mean by default: ``ValueError`` for 1)."""
    got = {}
    for lib in (torch, sf):
        lp = lib.tensor(X).log_softmax(2)
        got[lib] = lib.ctc_loss(lp, lib.tensor([[1, 2], [3, 3], [1, 0]]), [6, 5, 4], [2, 2, 1], *args).numpy()
    np.testing.assert_allclose(got[sf], got[torch], rtol=1e-12)
