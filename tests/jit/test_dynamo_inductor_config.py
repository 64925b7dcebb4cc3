"""``torch._dynamo.config`` / ``torch._inductor.config`` as scripts use them, against torch
2.13: the same names and defaults, ``AttributeError`` for a name torch lacks, ``patch`` as a
context manager and decorator, and ``cache_size_limit`` driving shardflow.compile's cache."""

import pytest
import torch
import torch._dynamo.config as torch_dynamo_config
import torch._inductor.config as torch_inductor_config

import shardflow
import shardflow._dynamo.config as sf_dynamo_config
import shardflow._inductor.config as sf_inductor_config
from shardflow.jit import api as jit_api


def _names(cfg):
    return sorted(n for n in dir(cfg) if not n.startswith("_") and n not in ("DEFAULTS", "SUBCONFIGS"))


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch: inline_inbuilt_nn_modules is deprecated
def test_every_dynamo_setting_has_torchs_default():
    for name in sf_dynamo_config.DEFAULTS:
        assert getattr(sf_dynamo_config, name) == getattr(torch_dynamo_config, name), name
    assert sf_dynamo_config.cache_size_limit == torch_dynamo_config.cache_size_limit == 8


def test_every_inductor_setting_has_torchs_default():
    for name in sf_inductor_config.DEFAULTS:
        assert getattr(sf_inductor_config, name) == getattr(torch_inductor_config, name), name
    for sub, cfg in sf_inductor_config.SUBCONFIGS.items():
        for name in cfg._values:
            assert getattr(getattr(sf_inductor_config, sub), name) == \
                getattr(getattr(torch_inductor_config, sub), name), f"{sub}.{name}"


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_unknown_settings_raise_as_torch(lib):
    with pytest.raises(AttributeError, match=r"torch\._dynamo\.config\.no_such_setting does not exist"):
        lib._dynamo.config.no_such_setting = 1
    with pytest.raises(AttributeError, match=r"no_such_setting does not exist"):
        lib._inductor.config.no_such_setting  # noqa: B018
    with pytest.raises(AttributeError, match="does not exist"):
        with lib._dynamo.config.patch(no_such_setting=1):
            pass


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_patch_restores_as_torch(lib):
    cfg = lib._dynamo.config
    with cfg.patch(verbose=True, suppress_errors=True):
        assert cfg.verbose and cfg.suppress_errors
    assert not cfg.verbose and not cfg.suppress_errors

    @cfg.patch("verbose", True)
    def inside():
        return cfg.verbose

    assert inside() is True and cfg.verbose is False
    old = lib._inductor.config.coordinate_descent_tuning
    lib._inductor.config.coordinate_descent_tuning = True
    lib._inductor.config.triton.cudagraphs = False
    assert lib._inductor.config.coordinate_descent_tuning is True
    lib._inductor.config.coordinate_descent_tuning = old


def test_cache_size_limit_is_shardflows_compile_cache_limit():
    old = jit_api.cache_size_limit
    try:
        shardflow._dynamo.config.cache_size_limit = 1
        assert jit_api.cache_size_limit == 1 and shardflow._dynamo.config.recompile_limit == 1
        calls = []

        @shardflow.compile
        def f(x):
            calls.append(tuple(x.shape))
            return x * 2

        f(shardflow.ones(2))
        f(shardflow.ones(2))  # replayed: no new trace
        f(shardflow.ones(3))  # a second shape: over the limit of 1, runs eagerly
        f(shardflow.ones(3))
        assert calls == [(2,), (3,), (3,)]  # traced once for (2,), eager twice for (3,)
        with pytest.raises(ValueError, match="non-negative int"):
            shardflow._dynamo.config.cache_size_limit = -1
    finally:
        shardflow._dynamo.config.cache_size_limit = old


def test_dynamo_markers_leave_results_alone():
    t = shardflow.ones(2, 3)
    shardflow._dynamo.mark_dynamic(t, 0)
    shardflow._dynamo.maybe_mark_dynamic(t, 1)
    shardflow._dynamo.mark_static(t)
    shardflow._dynamo.graph_break()
    shardflow._dynamo.reset()
    with pytest.raises(TypeError, match="expected a tensor"):
        shardflow._dynamo.mark_dynamic([1, 2], 0)

    @shardflow._dynamo.optimize("inductor")
    def double(x):
        return x * 2

    assert double(t).tolist() == [[2.0] * 3] * 2
