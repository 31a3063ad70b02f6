"""``ember.fft``: the ``torch.fft`` namespace (re-exports only; the operators live in
``ember.ops.fft``)."""

from __future__ import annotations

from ember.ops.fft import fft_fft as fft
from ember.ops.fft import fft_fft2 as fft2
from ember.ops.fft import fft_fftfreq as fftfreq
from ember.ops.fft import fft_fftn as fftn
from ember.ops.fft import fft_fftshift as fftshift
from ember.ops.fft import fft_hfft as hfft
from ember.ops.fft import fft_hfft2 as hfft2
from ember.ops.fft import fft_hfftn as hfftn
from ember.ops.fft import fft_ifft as ifft
from ember.ops.fft import fft_ifft2 as ifft2
from ember.ops.fft import fft_ifftn as ifftn
from ember.ops.fft import fft_ifftshift as ifftshift
from ember.ops.fft import fft_ihfft as ihfft
from ember.ops.fft import fft_ihfft2 as ihfft2
from ember.ops.fft import fft_ihfftn as ihfftn
from ember.ops.fft import fft_irfft as irfft
from ember.ops.fft import fft_irfft2 as irfft2
from ember.ops.fft import fft_irfftn as irfftn
from ember.ops.fft import fft_rfft as rfft
from ember.ops.fft import fft_rfft2 as rfft2
from ember.ops.fft import fft_rfftfreq as rfftfreq
from ember.ops.fft import fft_rfftn as rfftn

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft",
           "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]
