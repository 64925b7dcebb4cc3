"""torch's module paths that programs import from (``torch.nn.modules.<file>``, ``torch.version``,
``torch.utils.hooks``): the same names, and the bases are shardflow's real bases, so
``isinstance`` checks in programs (a weight-decay filter on ``_BatchNorm``) hold."""

import collections
import importlib
import inspect

import pytest
import torch

import shardflow as sf

FILES = ["batchnorm", "conv", "utils", "module", "linear", "activation", "loss", "container", "dropout", "pooling",
         "normalization", "rnn", "sparse", "transformer", "padding", "upsampling", "fold", "instancenorm", "adaptive", "flatten",
         "pixelshuffle", "channelshuffle", "distance"]
# torch names under these paths that shardflow has not built (Lazy modules, FractionalMaxPool, global
# module hooks ...): each is listed in docs/COMPAT.md's gap list or its own note
NOT_BUILT = {"LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyModuleMixin", "_LazyNormBase",
             "sync_batch_norm", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
             "LazyConvTranspose3d", "_ConvTransposeMixin", "_LazyConvXdMixin", "_reverse_repeat_tuple",
             "_WrappedHook", "_forward_unimplemented", "_has_any_global_hook", "Linear", "PairwiseDistance", "Container", "_addindent",
             "FractionalMaxPool2d", "FractionalMaxPool3d", "_pair", "_single", "_triple", "_ntuple", "_quadruple",
             "_cross_map_lrn2d", "_apply_permutation", "apply_permutation", "_get_activation_fn",
             "_arg_requires_grad", "_check_arg_device", "_is_make_fx_tracing", "LazyInstanceNorm1d",
             "LazyInstanceNorm2d", "LazyInstanceNorm3d", "Module"}
ALWAYS = {"utils": {"_pair", "_single", "_triple", "_ntuple", "_quadruple", "_reverse_repeat_tuple"},
          "module": {"_addindent"}}


def _torch_classes_and_functions(mod):
    return [n for n in dir(mod) if (inspect.isclass(getattr(mod, n)) or inspect.isfunction(getattr(mod, n)))
            and getattr(getattr(mod, n), "__module__", "").startswith("torch.nn.modules")
            and not n.startswith("register_module_")]


@pytest.mark.parametrize("name", FILES)
def test_nn_modules_file_has_torchs_classes(name):
    t_mod = importlib.import_module(f"torch.nn.modules.{name}")
    s_mod = getattr(sf.nn.modules, name)  # reachable as an attribute, as in torch
    assert s_mod is importlib.import_module(f"shardflow.nn.modules.{name}")
    wanted = [n for n in _torch_classes_and_functions(t_mod) if n not in NOT_BUILT or n in ALWAYS.get(name, ())]
    assert wanted, name
    missing = [n for n in wanted if not hasattr(s_mod, n)]
    assert missing == [], f"torch.nn.modules.{name} names shardflow lacks: {missing}"


@pytest.mark.parametrize("path, base, layers", [
    ("batchnorm", "_BatchNorm", ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]),
    ("batchnorm", "_NormBase", ["BatchNorm2d", "InstanceNorm1d"]),
    ("instancenorm", "_InstanceNorm", ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]),
    ("conv", "_ConvNd", ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d"]),
    ("loss", "_Loss", ["MSELoss", "L1Loss", "CrossEntropyLoss"]),
    ("loss", "_WeightedLoss", ["CrossEntropyLoss", "NLLLoss", "BCELoss"]),
    ("dropout", "_DropoutNd", ["Dropout", "Dropout2d", "AlphaDropout"]),
    ("rnn", "RNNBase", ["LSTM", "GRU", "RNN"]),
    ("pooling", "_AdaptiveAvgPoolNd", ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"]),
    ("pooling", "_AdaptiveMaxPoolNd", ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]),
    ("padding", "_ReflectionPadNd", ["ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d"]),
    ("padding", "_ReplicationPadNd", ["ReplicationPad1d", "ReplicationPad3d"]),
    ("padding", "_CircularPadNd", ["CircularPad2d"]),
    ("module", "Module", ["Linear", "Sequential"]),
])
def test_private_bases_are_real_bases_as_in_torch(path, base, layers):
    t_base = getattr(importlib.import_module(f"torch.nn.modules.{path}"), base)
    s_base = getattr(getattr(sf.nn.modules, path), base)
    for layer in layers:
        assert issubclass(getattr(torch.nn, layer), t_base), layer  # the relation is torch's
        assert issubclass(getattr(sf.nn, layer), s_base), layer
    assert s_base is getattr(sf.nn.modules.module, "Module") or issubclass(s_base, sf.nn.Module)


def test_weight_decay_groups_by_batchnorm_base():
    """The common recipe: no weight decay for norm layers and biases, found by isinstance."""
    from shardflow.nn.modules.batchnorm import _BatchNorm

    model = sf.nn.Sequential(sf.nn.Conv2d(3, 4, 3), sf.nn.BatchNorm2d(4), sf.nn.ReLU(), sf.nn.Conv2d(4, 2, 1),
                             sf.nn.SyncBatchNorm(2))
    no_decay = [p for m in model.modules() if isinstance(m, _BatchNorm) for p in m.parameters()]
    assert len(no_decay) == 4
    assert all(p.dim() == 1 for p in no_decay)


def test_paths_are_the_same_classes():
    m = sf.nn.modules
    assert m.upsampling.Upsample is sf.nn.Upsample and m.fold.Fold is sf.nn.Fold and m.fold.Unfold is sf.nn.Unfold
    assert m.instancenorm.InstanceNorm2d is sf.nn.InstanceNorm2d and m.batchnorm.BatchNorm1d is sf.nn.BatchNorm1d
    assert sf.nn.utils.clip_grad_norm_  # nn.utils is not shadowed by nn.modules.utils
    assert not hasattr(sf.nn, "conv") and not hasattr(torch.nn, "conv")  # files are not nn attributes


def test_tuple_helpers_match_torch():
    from torch.nn.modules import utils as tu

    from shardflow.nn.modules import utils as su

    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for arg in (3, (1, 2), [4, 5, 6]):
            assert getattr(su, name)(arg) == getattr(tu, name)(arg), (name, arg)
    assert su._ntuple(5)(2) == tu._ntuple(5)(2)
    assert su._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert su._list_with_default([None, 3], (1, 2, 7, 8)) == tu._list_with_default([None, 3], (1, 2, 7, 8))
    assert su._list_with_default(4, (1, 2)) == tu._list_with_default(4, (1, 2))


def test_consume_prefix_in_state_dict_matches_torch():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as t_consume

    from shardflow.nn.modules.utils import consume_prefix_in_state_dict_if_present as s_consume

    model = sf.nn.Sequential(sf.nn.Linear(2, 2), sf.nn.BatchNorm1d(2))
    wrapped = {"module." + k: v for k, v in model.state_dict().items()}
    wrapped["other"] = sf.zeros(1)
    t_sd = {k: torch.zeros(1) for k in wrapped}
    s_consume(wrapped, "module.")
    t_consume(t_sd, "module.")
    assert list(wrapped) == list(t_sd)
    model.load_state_dict({k: v for k, v in wrapped.items() if k != "other"})


def test_version_module_like_torch_cpu_build():
    assert sf.version.__version__ == sf.__version__
    for name in ("cuda", "hip", "debug", "git_version", "__version__"):
        assert hasattr(torch.version, name) and hasattr(sf.version, name), name
    assert sf.version.cuda is None is torch.version.cuda  # a CPU build
    assert sf.version.hip is None is torch.version.hip
    assert sf.version.debug is False is torch.version.debug
    assert isinstance(sf.version.git_version, str)
    from shardflow.version import SHARDFLOW_VERSION, __version__  # the import form programs use

    assert __version__ == f"2.13.0+shardflow.{SHARDFLOW_VERSION}" and SHARDFLOW_VERSION == "0.1.0"


def test_version_compares_as_torch_s_torch_version():
    """Programs gate on ``torch.__version__``: as a string, a tuple or a packaging Version."""
    from packaging.version import Version

    mine = sf.__version__
    theirs = torch.torch_version.TorchVersion(str(mine))
    assert isinstance(mine, str) and sf.torch_version.TorchVersion is type(mine)
    for other in ["1.0", "2.0", "2.13", "2.13.0", "2.13.1", "2.14.0a0", "2.13.0rc1", "2.13.0.dev1", "3",
                  (2, 0), (2, 13), (2, 13, 0), (2, 13, 1), [1, 9], "parrot", "2.13.0+cpu", "2.13.0.post1"]:
        for op in ("__gt__", "__ge__", "__lt__", "__le__", "__eq__"):
            assert getattr(mine, op)(other) == getattr(theirs, op)(other), (other, op)
    assert mine >= "2.0" and mine >= (1, 12) and Version(mine) >= Version("2.0") and mine > Version("2.12")
    assert {mine: 1}[str(mine)] == 1


def test_utils_hooks_removable_handle_is_shardflows_handle():
    from shardflow.utils.hooks import RemovableHandle

    lin = sf.nn.Linear(2, 2)
    handle = lin.register_forward_hook(lambda m, i, o: None)
    assert isinstance(handle, RemovableHandle)
    # torch's own use: a handle over the program's own hook dict (and extra_dict)
    for cls in (torch.utils.hooks.RemovableHandle, RemovableHandle):
        hooks, flags = collections.OrderedDict(), collections.OrderedDict()  # torch keeps weak references
        h = cls(hooks, extra_dict=flags)
        hooks[h.id], flags[h.id] = "hook", True
        h2 = cls(hooks)
        hooks[h2.id] = "hook2"
        assert h2.id != h.id
        h.remove()
        assert list(hooks.values()) == ["hook2"] and flags == {}
        with h2:
            pass
        assert hooks == {}
