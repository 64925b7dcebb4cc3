"""``print(device_mesh)`` / ``f"{device_mesh=}"`` of a mesh from ``init_device_mesh`` reads as
PyTorch's ``DeviceMesh`` repr (the tensor-parallel examples log it); it read
``placement(type='cpu', ranks=[0])``. The strings below are what torch 2.13 prints in one
process (``tests/parity/test_public_programs_more_j.py`` checks 2 ranks:
``DeviceMesh((2,), 'cpu', stride=(1,))``). A ``placement`` made directly keeps OneFlow's repr."""

import pytest

torch = pytest.importorskip("torch")

import shardflow.distributed as dist  # noqa: E402
from shardflow.distributed.device_mesh import init_device_mesh  # noqa: E402


def test_one_dimension():
    mesh = init_device_mesh("cpu", (1,))
    assert f"{mesh=}" == "mesh=DeviceMesh((1,), 'cpu', stride=((),))"


def test_named_dimensions_and_sub_mesh():
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    assert repr(mesh) == "DeviceMesh((dp=1, tp=1), 'cpu', stride=((), ()))"
    assert str(mesh["tp"]) == "DeviceMesh((tp=1), 'cpu', stride=((),))"


def test_placement_keeps_oneflows_repr():
    assert repr(dist.placement("cpu", [0])) == "placement(type='cpu', ranks=[0])"


def test_matches_torch_in_one_process(tmp_path):
    """The same meshes built by torch (a one-rank gloo group in a child process)."""
    import subprocess
    import sys

    code = (
        "import os, torch.distributed as d\n"
        "os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='0', RANK='0', WORLD_SIZE='1')\n"
        "from torch.distributed.device_mesh import init_device_mesh as i\n"
        "d.init_process_group('gloo', store=d.HashStore(), rank=0, world_size=1)\n"
        "m = i('cpu', (1, 1), mesh_dim_names=('dp', 'tp'))\n"
        "print(repr(i('cpu', (1,)))); print(repr(m)); print(repr(m['tp']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    ours = [repr(init_device_mesh("cpu", (1,))), repr(mesh), repr(mesh["tp"])]
    assert out.stdout.splitlines() == ours
