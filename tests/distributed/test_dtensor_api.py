"""Global tensors answer PyTorch's DTensor API and placements answer DeviceMesh's (issue 27),
on 2 MPI ranks against torch's DTensor (CPU, gloo) in the same processes
(``torch_compat/run_dtensor_api.py``): meshes (1-D, 2-D (1, 2) and (2, 1) with names:
``get_rank``, ``get_local_rank(dim)``, ``size``, ``ndim``, ``shape``, ``mesh_dim_names``,
``mesh["dp"]``, ``get_group`` used in a collective, torch's refusal without ``mesh_dim``);
``distribute_tensor``/``to_local``/``full_tensor``/``redistribute`` for every pair of Shard(0),
Shard(1), Replicate; ``isinstance(x, DTensor)``; ``DTensor.from_local`` with Shard (shape from
the shards, gradients) and Partial; ``nn.Parameter(dtensor)`` keeping its layout and giving a
laid-out gradient; ``distribute_module`` with torch's documented partition_fn; the factories."""

from pathlib import Path

import pytest

from shardflow.testing.mpi import run_script

pytest.importorskip("torch")

PROGRAM = Path(__file__).parent / "torch_compat" / "run_dtensor_api.py"


def test_dtensor_and_device_mesh_api_match_torch():
    res = run_script(str(PROGRAM), n=2, timeout=300).check()
    assert res.output.count("DTENSOR API OK") == 2, res.output
