"""When the fusion tests can run: fused groups are generated Numba kernels, so a test about
fused groups needs numba (and ``SHARDFLOW_KERNELS`` not ``numpy``); the rest of the compiler
(passes, guards, fallbacks, plain replays) runs and is tested without it."""

import pytest

from shardflow import kernels


def fusion_on() -> bool:
    return kernels.available() and kernels.enabled()


needs_fusion = pytest.mark.skipif(not fusion_on(), reason="fusion needs the Numba kernels "
                                  "(pip install numba; SHARDFLOW_KERNELS not 'numpy')")
