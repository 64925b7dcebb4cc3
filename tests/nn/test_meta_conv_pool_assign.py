"""The meta device through convolution and pooling (the shapes torch's meta kernels give,
as pytorch/tutorials' "Reasoning about Shapes" recipe prints them from forward hooks), and
``load_state_dict(assign=True)`` into a model built on the meta device (the "Tips for
loading an nn.Module from a checkpoint" recipe): the module takes the state dict's tensors,
on their device, sharing their memory. Both checked against torch."""

import numpy as np
import pytest
import torch

import shardflow as sf

CASES = [
    ("conv1d", lambda lib: lib.nn.functional.conv1d(
        lib.empty(2, 4, 9, device="meta"), lib.empty(6, 2, 3, device="meta"), stride=2, groups=2)),
    ("conv2d", lambda lib: lib.nn.Conv2d(3, 5, 2, device="meta")(lib.rand(2, 3, 10, 10, device="meta"))),
    ("conv2d huge", lambda lib: lib.nn.Conv2d(3, 5, 2, device="meta")(
        lib.rand(2**10, 3, 2**16, 2**16, device="meta"))),
    ("conv2d padded dilated unbatched", lambda lib: lib.nn.functional.conv2d(
        lib.empty(3, 8, 7, device="meta"), lib.empty(4, 3, 3, 2, device="meta"),
        lib.empty(4, device="meta"), padding=(2, 1), dilation=(2, 1))),
    ("conv3d", lambda lib: lib.nn.Conv3d(2, 3, (1, 2, 3), padding=1, device="meta")(
        lib.empty(1, 2, 4, 5, 6, device="meta"))),
    ("max_pool2d", lambda lib: lib.nn.MaxPool2d(2, 2)(lib.empty(4, 6, 28, 28, device="meta"))),
    ("max_pool2d ceil", lambda lib: lib.nn.functional.max_pool2d(
        lib.empty(1, 2, 7, 9, device="meta"), 3, 2, ceil_mode=True)),
    ("max_pool1d indices", lambda lib: lib.nn.functional.max_pool1d(
        lib.empty(2, 3, 11, device="meta"), 3, return_indices=True)),
    ("avg_pool2d", lambda lib: lib.nn.AvgPool2d(3, 2, padding=1)(lib.empty(2, 3, 8, 8, device="meta"))),
    ("adaptive_avg_pool2d", lambda lib: lib.nn.AdaptiveAvgPool2d((1, 1))(lib.empty(2, 8, 7, 7, device="meta"))),
    ("adaptive_avg_pool2d 3x2", lambda lib: lib.nn.functional.adaptive_avg_pool2d(
        lib.empty(2, 8, 7, 5, device="meta"), (3, 2))),
    ("adaptive_max_pool2d indices", lambda lib: lib.nn.functional.adaptive_max_pool2d(
        lib.empty(2, 8, 7, 5, device="meta"), (3, 2), return_indices=True)),
]


def _shapes(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [(tuple(o.shape), str(o.dtype).split(".")[-1], o.device.type) for o in outs]


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_conv_and_pooling_shapes_on_meta_as_torch(name, fn):
    ours, theirs = fn(sf), fn(torch)
    assert _shapes(ours) == _shapes(theirs), name
    assert all(o.device.type == "meta" for o in (ours if isinstance(ours, tuple) else (ours,)))


def test_conv_on_meta_keeps_the_graph_and_its_grad_fn_name():
    w = sf.empty(5, 3, 2, 2, device="meta", requires_grad=True)
    out = sf.nn.functional.conv2d(sf.empty(2, 3, 4, 4, device="meta"), w)
    tw = torch.empty(5, 3, 2, 2, device="meta", requires_grad=True)
    tout = torch.nn.functional.conv2d(torch.empty(2, 3, 4, 4, device="meta"), tw)
    assert repr(out) == repr(tout)  # tensor(..., device='meta', size=(2, 5, 3, 3), grad_fn=<ConvolutionBackward0>)


def test_meta_conv_refuses_a_kernel_larger_than_the_input():
    with pytest.raises(RuntimeError, match="kernel"):
        sf.nn.functional.conv2d(sf.empty(1, 1, 2, 2, device="meta"), sf.empty(1, 1, 3, 3, device="meta"))
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv2d(torch.empty(1, 1, 2, 2, device="meta"), torch.empty(1, 1, 3, 3, device="meta"))


def _meta_linear(lib):
    with lib.device("meta"):
        m = lib.nn.Linear(3, 2)
        m.register_buffer("steps", lib.zeros(2))
    return m


def test_load_state_dict_assign_into_a_meta_model_takes_the_values_as_torch():
    state = torch.nn.Linear(3, 2).state_dict()
    state["steps"] = torch.arange(2.0)
    theirs = _meta_linear(torch)
    theirs.load_state_dict(state, assign=True)
    ours = _meta_linear(sf)
    sf_state = {k: sf.tensor(v.numpy()) for k, v in state.items()}
    assert repr(ours.load_state_dict(sf_state, assign=True)) == "<All keys matched successfully>"
    for name in ("weight", "bias", "steps"):
        o, t = getattr(ours, name), getattr(theirs, name)
        assert (o.device.type, o.is_meta, type(o).__name__, o.requires_grad) == (
            t.device.type, t.is_meta, type(t).__name__, t.requires_grad), name
        np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())
    # the module holds the state dict's memory, as torch's (Parameter(input_param))
    with torch.no_grad():
        state["weight"][0, 0] = 7.0
    with sf.no_grad():
        sf_state["weight"][0, 0] = 7.0
    assert theirs.weight[0, 0].item() == 7.0 and ours.weight[0, 0].item() == 7.0
    assert ours(sf.ones(1, 3)).shape == (1, 2) and ours.weight.grad is None


def test_load_state_dict_assign_keeps_dtype_and_requires_grad_false():
    for lib in (torch, sf):
        m = lib.nn.Linear(2, 2)
        m.weight.requires_grad_(False)
        m.load_state_dict({"weight": lib.ones(2, 2, dtype=lib.float64), "bias": lib.zeros(2)}, assign=True)
        assert m.weight.dtype == lib.float64 and m.weight.requires_grad is False and m.bias.requires_grad
        assert isinstance(m.weight, lib.nn.Parameter)
