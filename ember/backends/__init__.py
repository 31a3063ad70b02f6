"""L7: backends register kernels into the dispatcher: ``cpu`` (NumPy) and ``meta`` (shapes)."""

from ember.backends import cpu, meta  # noqa: F401  (registration happens on import)
