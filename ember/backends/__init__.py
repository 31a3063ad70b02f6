"""L7: backends register kernels into the dispatcher: ``cpu`` (NumPy), ``meta`` (shapes) and
``autocast`` (mixed-precision casting policies).

``cpu`` is imported by the device registry on the first CPU dispatch (NOTE [Kernels are found
by the registry] in ember/memory/devices.py); ``autocast`` registers its policies on import.
``mkl`` answers whether the CPU products run on MKL (``torch.backends.mkl``).
"""

# autocast registers its policies, complex32 the ComplexHalf key's fallback, on import
from ember.backends import autocast, complex32, meta, mkl  # noqa: F401
