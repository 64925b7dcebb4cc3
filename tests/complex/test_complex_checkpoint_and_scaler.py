"""Complex parameters through checkpoints and the grad scaler, as torch: ``save`` of a state
dict with complex64 tensors writes safetensors' ``C64`` (shardflow raised TypeError, so a
complex model could not be checkpointed), complex128 ones go to torch.save's pickle format
(``ComplexDoubleStorage``: safetensors has no complex128); ``load`` reads torch.save files
holding complex storages (shardflow refused ``torch.ComplexFloatStorage`` as an unsafe global);
``GradScaler.unscale_`` of a complex gradient raises torch's NotImplementedError (shardflow
unscaled it)."""

import numpy as np
import pytest
import safetensors.torch
import torch

import shardflow as sf


def _z(dtype):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_save_load_complex_state_dict(tmp_path, dtype):
    z = _z(dtype)
    path = tmp_path / "model.pt"
    sf.save({"w": sf.nn.Parameter(sf.tensor(z)), "state": {"exp_avg": sf.tensor(z[0])}}, path)
    back = sf.load(path)
    assert isinstance(back["w"], sf.nn.Parameter)
    np.testing.assert_array_equal(back["w"].detach().numpy(), z)
    np.testing.assert_array_equal(back["state"]["exp_avg"].numpy(), z[0])
    if dtype == np.complex64:  # a standard safetensors file: torch's reader agrees
        np.testing.assert_array_equal(safetensors.torch.load_file(path)["w"].numpy(), z)
    else:  # torch.save's format
        np.testing.assert_array_equal(torch.load(path)["w"].detach().numpy(), z)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_load_torch_saved_complex(tmp_path, dtype):
    z = _z(dtype)
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.nn.Parameter(torch.tensor(z)), "b": torch.tensor(z[:, 0])}, path)
    back = sf.load(path)
    np.testing.assert_array_equal(back["w"].detach().numpy(), z)
    np.testing.assert_array_equal(back["b"].numpy(), z[:, 0])


def test_grad_scaler_refuses_complex_gradients_like_torch():
    for L in (torch, sf):
        model = L.nn.Linear(2, 2, dtype=L.cfloat)
        opt = L.optim.SGD(model.parameters(), lr=0.1)
        scaler = L.amp.GradScaler("cpu", init_scale=4.0)
        scaler.scale(model(L.ones(1, 2, dtype=L.cfloat)).abs().sum()).backward()
        before = model.weight.grad.numpy().copy()
        with pytest.raises(NotImplementedError, match="\"_amp_foreach_non_finite_check_and_unscale_"
                                                      "cpu\" not implemented for 'ComplexFloat'"):
            scaler.step(opt)
        np.testing.assert_array_equal(model.weight.grad.numpy(), before)  # nothing unscaled
