"""L7: backends register kernels into the dispatcher: ``cpu`` (NumPy), ``meta`` (shapes) and
``autocast`` (mixed-precision casting policies).

``cpu`` is imported by the device registry on the first CPU dispatch (NOTE [Kernels are found
by the registry] in ember/memory/devices.py); ``autocast`` registers its policies on import.
``mkl`` answers whether the CPU products run on MKL (``torch.backends.mkl``).
"""

from ember.backends import autocast, meta, mkl  # noqa: F401  (registration happens on import)
from ember.backends import complex32  # noqa: F401  (the ComplexHalf key's fallback)
