"""The CPU backend: NumPy kernels, registered into the dispatcher on import."""

from ember.backends.cpu import copy, creation, pointwise  # noqa: F401
