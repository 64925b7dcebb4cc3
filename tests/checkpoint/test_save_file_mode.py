"""``shardflow.save`` leaves a file with the permissions ``torch.save`` gives it.

torch.save opens the path with ``open(path, "wb")``: a new file gets ``0o666`` less the
umask, an existing one keeps its mode. shardflow writes through a temp file and a rename
(``checkpoint/atomic.py``), and ``mkstemp`` made every checkpoint ``0o600`` -- unreadable to
the rest of a group on a shared cluster, where torch's was readable. Found by
aladdinpersson/Machine-Learning-Collection's ``pytorch_loadsave.py``
(``tests/parity/test_public_programs_more_u.py``)."""

import os
import stat

import pytest
import torch

import shardflow


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask():
    """Set the process umask for one test, and put the old one back."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
@pytest.mark.parametrize("what", ["state_dict", "module"])
def test_new_file_mode_as_torch(tmp_path, umask, mask, what):
    """A new file: ``0o666 & ~umask``, in both frameworks; a state dict (safetensors) and a
    whole module (the pickle path) alike."""
    umask(mask)
    th_obj = torch.nn.Linear(2, 2) if what == "module" else {"w": torch.ones(2)}
    sf_obj = shardflow.nn.Linear(2, 2) if what == "module" else {"w": shardflow.ones(2)}
    torch.save(th_obj, tmp_path / "th.pt")
    shardflow.save(sf_obj, tmp_path / "sf.pt")
    assert _mode(tmp_path / "sf.pt") == _mode(tmp_path / "th.pt") == 0o666 & ~mask


def test_existing_file_keeps_its_mode_as_torch(tmp_path, umask):
    """Overwriting keeps the file's own mode (torch truncates the file in place; shardflow's
    renamed temp file takes the old file's bits); the file holds the new values."""
    umask(0o022)
    for name in ("th.pt", "sf.pt"):
        (tmp_path / name).write_bytes(b"old")
        os.chmod(tmp_path / name, 0o640)
    torch.save({"w": torch.ones(2)}, tmp_path / "th.pt")
    shardflow.save({"w": shardflow.ones(2)}, tmp_path / "sf.pt")
    assert _mode(tmp_path / "sf.pt") == _mode(tmp_path / "th.pt") == 0o640
    assert shardflow.load(tmp_path / "sf.pt")["w"].tolist() == [1.0, 1.0]
