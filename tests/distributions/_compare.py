"""Helpers shared by the continuous-family tests: tensors of one NumPy array in both
libraries, and comparisons whose tolerance follows the dtype's machine epsilon."""

from __future__ import annotations

import numpy as np
import torch

import ember

EPS64 = float(np.finfo(np.float64).eps)
# log densities and moments of these families are a few dozen flops each, with lgamma or
# log1p of moderately conditioned arguments; 1e4 ulps bounds their rounding comfortably
RTOL = 1e4 * EPS64
ATOL = 1e4 * EPS64


def both(array):
    """The same float64 values as an ember tensor and a torch tensor."""
    array = np.asarray(array, dtype=np.float64)
    return ember.tensor(array.copy()), torch.tensor(array.copy())


def to_numpy(value):
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if isinstance(value, ember.Tensor):
        return value.detach().numpy()
    return np.asarray(value)


def assert_same(ours, theirs, rtol=RTOL, atol=ATOL):
    """ember result ``ours`` equals torch result ``theirs``: shape, then values (nan and inf
    where torch has them)."""
    assert tuple(ours.shape) == tuple(theirs.shape), (tuple(ours.shape), tuple(theirs.shape))
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=rtol, atol=atol,
                               equal_nan=True)
