"""The eager hot paths give exactly what the general paths give (NOTE [Indexing fast paths])."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import ember
from ember.dispatch import DispatchMode
from ember.ops import indexing

_INTS = [0, 2, -1, -3]
_SLICES = [slice(None), slice(1, None), slice(None, None, 2), slice(-2, None), slice(3, 1),
           slice(-100, 100, 3), slice(1, -1), slice(5, None), slice(None, -7)]


def _indices():
    items = _INTS + _SLICES
    yield from items
    yield from itertools.product(items, repeat=2)
    yield (1, slice(None), -1)


def _general(x, index):
    return indexing.basic_view(x, indexing._normalize(x, index))


@pytest.mark.parametrize("index", list(_indices()), ids=repr)
def test_fast_view_matches_general_path_and_torch(index):
    base = ember.arange(4 * 5 * 6.0).view(4, 5, 6)
    x = base.transpose(0, 2)[1:]  # strided, offset
    fast = x[index]
    ref = _general(x, index)
    assert (fast.shape, fast.stride(), fast.storage_offset()) == \
        (ref.shape, ref.stride(), ref.storage_offset())
    assert fast._base is ref._base is base._base and fast._ver is base._ver
    t = torch.arange(4 * 5 * 6.0).view(4, 5, 6).transpose(0, 2)[1:]
    expected = t[index]
    assert (tuple(fast.shape), fast.stride(), fast.storage_offset()) == \
        (tuple(expected.shape), expected.stride(), expected.storage_offset())
    np.testing.assert_array_equal(fast.numpy(), expected.numpy())


def test_fast_view_leaves_autograd_and_errors_to_the_general_path():
    x = ember.arange(12.0).view(3, 4).requires_grad_()
    y = x[1:, ::2]
    assert type(y.grad_fn).__name__ == "SliceBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [[0, 0, 0, 0], [1, 0, 1, 0], [1, 0, 1, 0]]
    with pytest.raises(IndexError, match="out of bounds"):
        ember.zeros(3, 4)[3]
    with pytest.raises(IndexError, match="too many indices"):
        ember.zeros(3)[0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        ember.zeros(3)[::-1]


def test_fast_view_respects_dispatch_modes():
    seen = []

    class Recorder(DispatchMode):
        def __ember_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return func(*args, **(kwargs or {}))

    x = ember.zeros(4, 4)
    with Recorder():
        x[1:, 2]
    assert seen == ["slice", "select"]


def test_index_tensor_fast_path_matches_torch():
    x = ember.arange(24.0).view(4, 6).t()
    t = torch.arange(24.0).view(4, 6).t()
    for idx in ([0, -1, 3, 3], [[1, 2], [0, 5]], []):
        e_idx = ember.tensor(idx, dtype=ember.int64)
        t_idx = torch.tensor(idx, dtype=torch.int64)
        np.testing.assert_array_equal(x[e_idx].numpy(), t[t_idx].numpy())
        np.testing.assert_array_equal(x[e_idx.int()].numpy(), t[t_idx.int()].numpy())
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 0 with size 6"):
        x[ember.tensor([0, 6])]
    with pytest.raises(IndexError, match="index -7 is out of bounds for dimension 0 with size 6"):
        x[ember.tensor([-7])]


def test_scalar_root_gradient_and_accumulated_grad():
    a = ember.ones(3, requires_grad=True)
    loss = (a * 2.0).sum()
    loss.backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    assert a.grad.grad_fn is None and not a.grad.requires_grad and a.grad.is_contiguous()
    (a * 3.0).sum().backward()
    assert a.grad.tolist() == [5.0, 5.0, 5.0]
    b = ember.ones((), dtype=ember.float64, requires_grad=True)
    (b * 1.0).backward()
    assert b.grad.dtype is ember.float64 and b.grad.item() == 1.0
