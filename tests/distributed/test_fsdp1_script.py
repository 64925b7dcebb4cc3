"""A typical FSDP1 training script written for PyTorch (tests/parity/programs/fsdp1_train.py:
init_process_group("gloo"), DistributedSampler, FSDP with a transformer auto-wrap policy and
device_id=None, AdamW, a FULL_STATE_DICT saved on rank 0) runs under ``shardflow run -n 2``
with only its imports changed, and trains as the single-process computation on the union of
the two ranks' batches does: the logged epoch losses and the saved state dict (the plain
model's keys) agree. (PyTorch's FSDP1 itself refuses to run without an accelerator, so the
torch side of the script is not run here.) One launch; the single-process reference runs in
this process."""

import json
import re
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "parity" / "programs" / "fsdp1_train.py"


def _single_process_reference(epochs=1, batch_size=8, world=2):
    """The script's training, one process: each step's gradient is the mean over ranks of
    each rank's summed loss on its DistributedSampler batch (what FSDP averages)."""
    import shardflow as torch
    import shardflow.nn.functional as F
    from shardflow.utils.data.distributed import DistributedSampler
    from tests.parity.programs._harness import run_script

    g = run_script(SCRIPT, use_shardflow=True, as_main=False)
    torch.manual_seed(0)
    dataset = g.make_dataset()
    model = g.Net()
    samplers = [DistributedSampler(dataset, rank=r, num_replicas=world, shuffle=True) for r in range(world)]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x_all, y_all = dataset.tensors
    epoch_losses = []
    for epoch in range(epochs):
        idx = []
        for s in samplers:
            s.set_epoch(epoch)
            idx.append(list(s))
        total, count = 0.0, 0
        for b in range(0, len(idx[0]), batch_size):
            opt.zero_grad()
            for rows in (ix[b: b + batch_size] for ix in idx):
                loss = F.cross_entropy(model(x_all[rows]), y_all[rows], reduction="sum")
                (loss / world).backward()
                total += loss.item()
                count += len(rows)
            opt.step()
        epoch_losses.append(total / count)
    return epoch_losses, model.state_dict()


def test_torch_fsdp1_script_runs_under_shardflow_run_like_one_process(tmp_path):
    import shardflow
    from shardflow.testing.mpi import launch_cli

    save = tmp_path / "model.pt"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"script": str(SCRIPT), "shardflow": True, "argv": ["--epochs", "1", "--save", str(save)],
                                "out": str(tmp_path)}))
    res = launch_cli(["-n", "2", "-m", "tests.parity.programs._launch", str(spec)], timeout=180,
                     env={"OMP_NUM_THREADS": "1"})
    res.check()
    logged = [float(v) for v in re.findall(r"Train Epoch: \d+ \tLoss: ([0-9.]+)", res.output)]
    want_losses, want_sd = _single_process_reference()
    np.testing.assert_allclose(logged, want_losses, rtol=1e-5, atol=1e-6)  # printed with 6 decimals
    got = shardflow.load(str(save))
    assert list(got) == list(want_sd)
    for k, v in want_sd.items():
        np.testing.assert_allclose(got[k].numpy(), v.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
