"""Indexed row accumulation (``index_add``'s core, embedding's backward): the C rows against
``np.add.at`` (identical bits, repeated indices in order), the cases that keep NumPy, and
``index_add``/``embedding`` gradients against torch through both forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.backends.cpu import _accumulate as accumulate
from ember.backends.cpu.scatter_gather import index_add_values

needs_c = pytest.mark.skipif(accumulate._library() is None, reason="needs a C compiler")


def _case(rng, dtype, dim, shape, n):
    idx = rng.integers(0, shape[dim], n)
    values = rng.standard_normal(shape[:dim] + (n,) + shape[dim + 1:]).astype(dtype)
    target = rng.standard_normal(shape).astype(dtype)
    return target, idx, values


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim, shape, n", [(0, (65, 128), 1024), (1, (3, 7, 5), 40),
                                           (2, (2, 3, 9), 30), (0, (10,), 50), (0, (4, 3), 0)])
def test_c_rows_equal_add_at_bit_for_bit(dtype, dim, shape, n):
    rng = np.random.default_rng(dim + n)
    target, idx, values = _case(rng, dtype, dim, shape, n)
    want = target.copy()
    np.add.at(want, (slice(None),) * dim + (idx,), values)
    assert accumulate.add_rows(target, dim, idx, values)
    assert np.array_equal(target, want)


@pytest.mark.parametrize("make", [
    lambda t, v: (t.astype(np.float16), v.astype(np.float16)),   # dtype without a C form
    lambda t, v: (t.astype(np.int64), v.astype(np.int64)),
    lambda t, v: (np.asfortranarray(t), v),                       # strided target
    lambda t, v: (t, np.asfortranarray(v)),                       # strided values
    lambda t, v: (t, v.astype(np.float64)),                       # mixed dtypes
])
def test_other_arrays_are_left_to_numpy(make):
    rng = np.random.default_rng(0)
    target, idx, values = _case(rng, np.float32, 0, (6, 4), 9)
    target, values = make(target, values)
    before = target.copy()
    assert not accumulate.add_rows(target, 0, idx, values)
    assert np.array_equal(target, before)


def test_overlapping_values_are_left_to_numpy():
    buf = np.arange(24, dtype=np.float32).reshape(6, 4)
    assert not accumulate.add_rows(buf, 0, np.array([0, 1]), buf[2:4])


@pytest.mark.parametrize("use_c", [True, False])
@pytest.mark.parametrize("alpha", [1, -0.5])
def test_index_add_values_is_the_same_through_both_forms(use_c, alpha, monkeypatch):
    rng = np.random.default_rng(1)
    target, idx, values = _case(rng, np.float32, 1, (5, 8, 6), 40)
    want = target.copy()
    np.add.at(want, (slice(None), idx), values * alpha if alpha != 1 else values)
    if not use_c:
        monkeypatch.setattr(accumulate, "_library", lambda: None)
    index_add_values(target, 1, idx, values, alpha)
    assert np.array_equal(target, want)
    with pytest.raises(RuntimeError, match="index 8 is out of bounds for dimension 1"):
        index_add_values(target, 1, np.array([0, 8]), values[:, :2])


@pytest.mark.parametrize("use_c", [True, False])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_index_add_and_embedding_gradient_match_torch(use_c, dtype, monkeypatch):
    if not use_c:
        monkeypatch.setattr(accumulate, "_library", lambda: None)
    rng = np.random.default_rng(2)
    tdtype = getattr(torch, dtype.name)
    idx = rng.integers(0, 7, 300)
    w = rng.standard_normal((7, 16))
    src = rng.standard_normal((16, 300)).T      # non-contiguous source
    ours = ember.tensor(w, dtype=dtype).index_add(0, ember.tensor(idx), ember.tensor(src,
                                                                                 dtype=dtype))
    theirs = torch.tensor(w, dtype=tdtype).index_add(0, torch.tensor(idx),
                                                     torch.tensor(src, dtype=tdtype))
    eps = 1e-6 if dtype is ember.float32 else 1e-14
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=300 * eps, atol=300 * eps)

    ew = ember.tensor(w, dtype=dtype, requires_grad=True)
    tw = torch.tensor(w, dtype=tdtype, requires_grad=True)
    tokens = idx.reshape(20, 15)
    g = rng.standard_normal((20, 15, 16))
    F.embedding(ember.tensor(tokens), ew).backward(ember.tensor(g, dtype=dtype))
    torch.nn.functional.embedding(torch.tensor(tokens), tw).backward(torch.tensor(g,
                                                                                  dtype=tdtype))
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=300 * eps,
                               atol=300 * eps)
