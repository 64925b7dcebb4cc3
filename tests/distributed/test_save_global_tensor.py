"""``shardflow.save`` of global tensors: called on every rank it writes whole tensors;
called on one rank only (``if rank == 0: save(...)``) it fails at once in the gather,
naming the tensor and what to save instead, and no file is written."""

import numpy as np
import pytest

from shardflow.testing.mpi import run_mpi

pytestmark = pytest.mark.mpi

CODE = """
import os, sys
import numpy as np
import shardflow as sf
import shardflow.distributed as dist

dist.init_process_group()
rank, folder = dist.get_rank(), sys.argv[1]
pl = sf.placement("cpu", [0, 1])
w = sf.arange(8.0).reshape(4, 2).to_global(placement=pl, sbp=sf.sbp.broadcast)
w = w.to_global(sbp=sf.sbp.split(0))                     # each rank holds 2 rows
sf.save({"w": w}, os.path.join(folder, f"every_rank{rank}.safetensors"))
try:
    if rank == 0:
        sf.save({"layer.w": w}, os.path.join(folder, "rank0_only.safetensors"))
    dist.barrier()
except Exception as e:
    print(f"RANK{rank}_ERROR {type(e).__name__}: {e}".replace("\\n", " | "), flush=True)
"""


def test_save_on_every_rank_writes_whole_tensors_and_on_one_rank_fails_with_the_fix(tmp_path):
    import shardflow as sf

    res = run_mpi(CODE, n=2, timeout=90, args=(str(tmp_path),))
    for rank in (0, 1):
        np.testing.assert_array_equal(sf.load(tmp_path / f"every_rank{rank}.safetensors")["w"].numpy(),
                                      np.arange(8.0).reshape(4, 2))
    err0 = next(ln for ln in res.stdout.splitlines() if ln.startswith("RANK0_ERROR"))
    assert "CommError" in err0 and "'layer.w' is a global tensor" in err0, res.output
    assert "every rank must call save" in err0 and "to_local()" in err0, res.output
    assert "RANK1_ERROR CommError" in res.stdout, res.output   # its barrier met the gather
    assert not (tmp_path / "rank0_only.safetensors").exists()
    assert res.elapsed < 60, res.output
