"""PyTorch's tensor-parallel example programs run on shardflow with only their imports
changed (issue 27): tensor_parallel_example, sequence_parallel_example and fsdp_tp_example's
2-D mesh with its Llama TP/SP plan (``torch_compat/tp_examples.py``), each run on torch
(CPU, gloo) and on shardflow in the same 2 MPI ranks from the same weights and inputs: every
step's loss and every parameter (whole value, local shard and placements) agree; sequence
parallelism also equals one process on all rows; the tensor-parallel example as written
(optimizer made before ``parallelize_module``) trains on shardflow as torch's does with the
optimizer made after (in torch it does not train: its optimizer holds replaced tensors)."""

from pathlib import Path

import pytest

from shardflow.testing.mpi import run_script

pytest.importorskip("torch")

PROGRAM = Path(__file__).parent / "torch_compat" / "run_tp_examples.py"


def test_pytorch_tp_sp_2d_examples_match_torch():
    res = run_script(str(PROGRAM), n=2, timeout=300).check()
    assert res.output.count("TP EXAMPLES OK") == 2, res.output
