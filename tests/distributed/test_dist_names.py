"""torch.distributed's names that programs lacked (issue 27), on 2 MPI ranks against torch
(CPU, gloo) in the same processes (``torch_compat/run_dist_names.py``): after
``init_process_group("gloo")`` ``get_backend()`` is "gloo" for the world and a sub-group (it
was "mpi"); group rank helpers; the rooted collectives ``reduce``/``gather``/``scatter`` (every
root), ``gather_object``/``scatter_object_list``, ``all_to_all``; and
``torch.distributed.nn.functional``'s differentiable collectives (all_reduce SUM/AVG,
all_gather, broadcast, reduce, reduce_scatter, all_to_all, all_to_all_single, gather, scatter):
outputs and input gradients equal torch's; a MAX all-reduce's backward is refused."""

from pathlib import Path

import pytest

from shardflow.testing.mpi import run_script

pytest.importorskip("torch")

PROGRAM = Path(__file__).parent / "torch_compat" / "run_dist_names.py"


def test_backend_names_rooted_and_differentiable_collectives_match_torch():
    res = run_script(str(PROGRAM), n=2, timeout=300).check()
    assert res.output.count("DIST NAMES OK") == 2, res.output
