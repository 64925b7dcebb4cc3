"""``MixedPrecisionPolicy`` (PyTorch FSDP2's name, imported by its FSDP2 example): PyTorch's
fields and defaults; ``fully_shard`` takes the default policy (no casts) as no policy, and
refuses a non-floating dtype or a non-policy, naming it. One process (a world of one); the
casts themselves are tested on 2 ranks in test_fsdp_mixed_precision.py."""

import dataclasses

import numpy as np
import pytest


def _trained(mp_policy):
    import shardflow as sf
    import shardflow.nn as nn
    from shardflow.distributed.fsdp import fully_shard

    sf.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    kwargs = {} if mp_policy is None else {"mp_policy": mp_policy}
    fully_shard(m[0], **kwargs)
    fully_shard(m, **kwargs)
    opt = sf.optim.Adam(m.parameters(), lr=0.05)
    x = sf.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5))
    for _ in range(3):
        (m(x) ** 2).mean().backward()
        opt.step()
        opt.zero_grad()
    return [p.numpy().copy() for p in m.parameters()]


def test_fields_and_defaults_are_pytorchs():
    torch_fsdp = pytest.importorskip("torch.distributed.fsdp")
    from shardflow.distributed.fsdp import MixedPrecisionPolicy

    ours = {f.name: f.default for f in dataclasses.fields(MixedPrecisionPolicy)}
    theirs = {f.name: f.default for f in dataclasses.fields(torch_fsdp.MixedPrecisionPolicy)}
    assert ours == theirs


def test_default_policy_is_no_policy_and_a_bad_dtype_is_refused():
    import shardflow as sf
    import shardflow.nn as nn
    from shardflow.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    for a, b in zip(_trained(MixedPrecisionPolicy()), _trained(None)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="param_dtype must be a floating dtype"):
        fully_shard(nn.Linear(2, 2), mp_policy=MixedPrecisionPolicy(param_dtype=sf.int64))
    with pytest.raises(TypeError, match="reduce_dtype"):
        fully_shard(nn.Linear(2, 2), mp_policy=MixedPrecisionPolicy(reduce_dtype="not a dtype"))
    with pytest.raises(TypeError, match="MixedPrecisionPolicy"):
        fully_shard(nn.Linear(2, 2), mp_policy={"param_dtype": None})
