"""Helpers shared by the rank programs of tests/host_cuda (no side effects at import)."""

from __future__ import annotations

from tests.distributed.programs._common import close  # noqa: F401 (re-exported for these programs)


def install_host_cuda():
    """CuPy's host stand-in as CuPy and the fake NCCL (NCCL's calls over MPI) as the NCCL
    communicators' API, for the rest of this process; returns that API (``calls`` counts)."""
    from tests.doubles import host_cuda

    return host_cuda.install()


def init_nccl_world(**kwargs):
    """``install_host_cuda()`` then ``init_process_group("nccl")``; (api, rank, world size)."""
    import shardflow.distributed as dist

    api = install_host_cuda()
    dist.init_process_group("nccl", **kwargs)
    return api, dist.get_rank(), dist.get_world_size()


def on_cuda(t, what="") -> None:
    assert t.device.type == "cuda", (what, t.device)


def host(t):
    """A tensor's values as a NumPy array (from the device)."""
    return t.detach().cpu().numpy()
