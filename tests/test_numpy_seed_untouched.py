"""NumPy's global generator is torch's business only inside DataLoader workers: ``manual_seed``
leaves it alone (a program that seeds NumPy and torch differently draws NumPy's own values),
and a worker seeds it with torch's hash of ``(worker_id, base_seed)``."""
import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.data.dataloader import _seed_everything


def _numpy_after(lib):
    np.random.seed(42)
    lib.manual_seed(0)
    first = np.random.randint(1000, size=4).tolist()
    lib.manual_seed(5)
    return first, np.random.rand(2).tolist()


def test_manual_seed_leaves_numpy_alone_as_torch():
    assert _numpy_after(sf) == _numpy_after(torch)
    np.random.seed(42)
    expected = np.random.randint(1000, size=4).tolist()
    assert _numpy_after(sf)[0] == expected


@pytest.mark.parametrize("base_seed,worker_id", [(0, 0), (7, 1), (2**32 + 5, 3), (2**63 - 1, 2)])
def test_worker_numpy_seed_is_torchs(base_seed, worker_id):
    from torch.utils.data._utils.worker import _generate_state
    _seed_everything(base_seed, worker_id)
    got = np.random.get_state()[1][:8].tolist()
    np.random.seed(_generate_state(base_seed, worker_id))
    assert got == np.random.get_state()[1][:8].tolist()


class _Draws(sf.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return int(np.random.randint(10**6))


class _TorchDraws(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return int(np.random.randint(10**6))


def test_workers_draw_torchs_numpy_values_and_differ_from_each_other():
    def run(lib, ds):
        g = lib.Generator().manual_seed(7)
        return [b.tolist() for b in lib.utils.data.DataLoader(ds, batch_size=2, num_workers=2, generator=g)]
    got = run(sf, _Draws())
    assert got == run(torch, _TorchDraws())
    assert got[0] != got[1]  # the two workers' NumPy streams differ
