"""``torch.fft`` (a re-export module, no logic): the transforms are the ops of
``shardflow/ops/fft_ops.py`` (``fft_fft`` ... as torch's aten names), whose docstring states the
algorithm and the gradients."""

from .ops.fft_ops import fft_fft as fft
from .ops.fft_ops import fft_fft2 as fft2
from .ops.fft_ops import fft_fftfreq as fftfreq
from .ops.fft_ops import fft_fftn as fftn
from .ops.fft_ops import fft_fftshift as fftshift
from .ops.fft_ops import fft_hfft as hfft
from .ops.fft_ops import fft_hfft2 as hfft2
from .ops.fft_ops import fft_hfftn as hfftn
from .ops.fft_ops import fft_ifft as ifft
from .ops.fft_ops import fft_ifft2 as ifft2
from .ops.fft_ops import fft_ifftn as ifftn
from .ops.fft_ops import fft_ifftshift as ifftshift
from .ops.fft_ops import fft_ihfft as ihfft
from .ops.fft_ops import fft_ihfft2 as ihfft2
from .ops.fft_ops import fft_ihfftn as ihfftn
from .ops.fft_ops import fft_irfft as irfft
from .ops.fft_ops import fft_irfft2 as irfft2
from .ops.fft_ops import fft_irfftn as irfftn
from .ops.fft_ops import fft_rfft as rfft
from .ops.fft_ops import fft_rfft2 as rfft2
from .ops.fft_ops import fft_rfftfreq as rfftfreq
from .ops.fft_ops import fft_rfftn as rfftn

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
           "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
