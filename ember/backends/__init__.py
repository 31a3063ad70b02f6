"""L7: backends register kernels into the dispatcher: ``cpu`` (NumPy), ``meta`` (shapes) and
``autocast`` (mixed-precision casting policies)."""

from ember.backends import autocast, cpu, meta  # noqa: F401  (registration happens on import)
