"""ember.core.layout: pure shape/stride math, checked against torch's view machinery."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ember.core import layout as L

SETTINGS = settings(max_examples=300, deadline=None)


@st.composite
def geometries(draw, max_dims=4, allow_empty=True):
    """(shape, stride, offset) of a random view: strided slices of a dense block, permuted,
    with size-1 dims that may carry any stride and occasionally expanded (stride 0) dims."""
    nd = draw(st.integers(0, max_dims))
    low = 0 if allow_empty else 1
    shape = [draw(st.integers(low, 4)) for _ in range(nd)]
    steps = [draw(st.integers(1, 3)) for _ in range(nd)]
    dense = L.contiguous_strides([s * k for s, k in zip(shape, steps)])
    stride = [st_ * k for st_, k in zip(dense, steps)]
    for i in range(nd):
        if shape[i] == 1 and draw(st.booleans()):
            stride[i] = draw(st.integers(0, 50))
        elif draw(st.integers(0, 9)) == 0:
            stride[i] = 0  # expanded
    perm = draw(st.permutations(range(nd)))
    shape = tuple(shape[p] for p in perm)
    stride = tuple(stride[p] for p in perm)
    offset = draw(st.integers(0, 3))
    return shape, stride, offset


def torch_view(shape, stride, offset=0):
    need = max(L.storage_extent(shape, stride, offset), 1)
    return torch.arange(float(need)).as_strided(shape, stride, offset)


@st.composite
def factorization(draw, n):
    """A random shape with ``n`` elements (size-1 dims sprinkled in, maybe one ``-1``)."""
    factors = []
    m = n
    for p in (2, 3, 5, 7):
        while m and m % p == 0:
            factors.append(p)
            m //= p
    if m > 1:
        factors.append(m)
    if n == 0:
        factors = [0] + [draw(st.integers(1, 4)) for _ in range(draw(st.integers(0, 2)))]
    factors = list(draw(st.permutations(factors)))
    shape = []
    while factors:
        k = draw(st.integers(1, len(factors)))
        shape.append(math.prod(factors[:k]))
        factors = factors[k:]
    for _ in range(draw(st.integers(0, 2))):
        shape.insert(draw(st.integers(0, len(shape))), 1)
    if shape and n and draw(st.booleans()):
        shape[draw(st.integers(0, len(shape) - 1))] = -1
    return tuple(shape)


# -- strides and predicates ---------------------------------------------------------------------
@given(st.lists(st.integers(0, 5), max_size=5))
@SETTINGS
def test_contiguous_strides_and_numel(shape):
    t = torch.empty(shape)
    assert L.contiguous_strides(shape) == t.stride()
    assert L.numel(shape) == t.numel()


@given(geometries(allow_empty=False))
@SETTINGS
def test_is_contiguous_like_torch(geom):
    shape, stride, offset = geom
    assert L.is_contiguous(shape, stride) == torch_view(shape, stride, offset).is_contiguous()


@given(geometries())
@SETTINGS
def test_is_contiguous_like_torch_with_empty_dims_up_front(geom):
    shape, stride, _ = geom
    # Only geometries where every size-0 dim comes after all the dims that matter.
    assume(0 not in shape or all(s == 0 or s == 1 for s in shape[shape.index(0):]))
    assert L.is_contiguous(shape, stride) == torch_view(shape, stride).is_contiguous()


def test_is_contiguous_empty_with_odd_strides():
    assert L.is_contiguous((2, 0, 3), (5, 7, 2))


@given(geometries(allow_empty=False))
@SETTINGS
def test_is_non_overlapping_and_dense_like_torch(geom):
    shape, stride, offset = geom
    t = torch_view(shape, stride, offset)
    assert L.is_non_overlapping_and_dense(shape, stride) == \
        torch.ops.aten.is_non_overlapping_and_dense(t)


@pytest.mark.parametrize("shape,stride,want", [
    ((3, 4), (1, 3), True), ((2, 3, 4), (12, 1, 3), True), ((3, 4), (8, 2), False),
    ((3, 4), (0, 1), False), ((3, 1), (1, 99), True), ((2, 2), (1, 1), False), ((), (), True),
    ((5,), (2,), False)])
def test_is_non_overlapping_and_dense_cases(shape, stride, want):
    assert L.is_non_overlapping_and_dense(shape, stride) is want
    assert torch.ops.aten.is_non_overlapping_and_dense(torch_view(shape, stride)) is want


@given(geometries())
@SETTINGS
def test_storage_extent_and_overlap(geom):
    shape, stride, offset = geom
    if L.numel(shape) == 0:
        assert L.storage_extent(shape, stride, offset) == 0
        return
    idx = torch_view(shape, stride, offset).reshape(-1)  # the element positions themselves
    assert L.storage_extent(shape, stride, offset) == int(idx.max()) + 1
    zero_stride = any(s > 1 and st_ == 0 for s, st_ in zip(shape, stride))
    assert L.has_internal_overlap(shape, stride) == zero_stride
    if zero_stride:
        assert len(set(idx.tolist())) < len(idx)


# -- dims and shapes ----------------------------------------------------------------------------
@pytest.mark.parametrize("ndim", [0, 1, 3])
def test_canonical_dim(ndim):
    t = torch.zeros((2,) * ndim)
    bound = max(ndim, 1)
    for d in range(-bound - 2, bound + 2):
        if -bound <= d < bound:
            assert L.canonical_dim(d, ndim) == d % bound
            assert t.unsqueeze(0).squeeze(0).transpose(d, d).shape == t.shape
        else:
            with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in "
                               rf"range of \[{-bound}, {bound - 1}\], but got {d}\)"):
                L.canonical_dim(d, ndim)
            with pytest.raises(IndexError):
                t.transpose(d, 0)


def test_normalize_shape():
    assert L.normalize_shape((2, 3)) == (2, 3)
    assert L.normalize_shape(((2, 3),)) == (2, 3)
    assert L.normalize_shape(([4],)) == (4,)
    assert L.normalize_shape((torch.Size([1, 2]),)) == (1, 2)
    assert L.normalize_shape((torch.tensor(2), 3)) == (2, 3)
    with pytest.raises(TypeError, match="sequence of integers"):
        L.normalize_shape((None, 2))


@pytest.mark.parametrize("bad", [(2.5, 3), ("a",)])
def test_normalize_shape_rejects_non_integers(bad):
    with pytest.raises(TypeError):
        torch.zeros(bad)
    with pytest.raises(TypeError):
        L.normalize_shape(bad)


@pytest.mark.parametrize("shape,count", [((4, -1), 6), ((-2, 3), 6), ((-1, -1), 6), ((5,), 6),
                                         ((0, -1), 6), ((2, -1), 6), ((-1,), 0), ((3, 0), 0),
                                         ((0, -1), 0), ((1, -1, 1), 7)])
def test_infer_size_like_torch_view(shape, count):
    t = torch.zeros(count)
    try:
        want = tuple(t.view(shape).shape)
    except RuntimeError as err:
        message = str(err)
        with pytest.raises(RuntimeError) as ours:
            L.infer_size(shape, count)
        key = {"only one": "only one dimension can be inferred",
               "invalid shape dimension": "invalid shape dimension -2",
               "is invalid for input": f"shape '{list(shape)}' is invalid for input of size"}
        for needle, text in key.items():
            if needle in message:
                assert text in str(ours.value)
        return
    assert L.infer_size(shape, count) == want


@given(st.lists(st.lists(st.integers(0, 3), max_size=4), min_size=1, max_size=4))
@SETTINGS
def test_broadcast_shapes_like_torch(shapes):
    try:
        want = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="must match the size of tensor"):
            L.broadcast_shapes(*shapes)
        return
    assert L.broadcast_shapes(*shapes) == want


def test_broadcast_shapes_message():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                       r"tensor b \(4\) at non-singleton dimension 0"):
        L.broadcast_shapes((2, 3), (4, 3))
    assert L.broadcast_shapes() == ()


@given(geometries(max_dims=3), st.data())
@SETTINGS
def test_expand_geometry_like_torch(geom, data):
    shape, stride, offset = geom
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = list(lead) + [data.draw(st.sampled_from([s, -1, 3] if s == 1 else [s, -1, s + 1]))
                           for s in shape]
    t = torch_view(shape, stride, offset)
    try:
        want = t.expand(target)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            L.expand_geometry(shape, stride, target)
        return
    got_shape, got_stride = L.expand_geometry(shape, stride, target)
    assert got_shape == tuple(want.shape)
    for size, a, b in zip(got_shape, got_stride, want.stride()):
        assert size <= 1 or a == b


def test_expand_geometry_errors():
    with pytest.raises(RuntimeError, match="must be greater or equal to the number of dimensions"):
        L.expand_geometry((2, 3), (3, 1), (3,))
    with pytest.raises(RuntimeError, match="-1 is not allowed in a leading, non-existing dim"):
        L.expand_geometry((2, 3), (3, 1), (-1, 2, 3))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match the "
                       r"existing size \(2\) at non-singleton dimension 0"):
        L.expand_geometry((2, 3), (3, 1), (4, 3))


# -- view strides -------------------------------------------------------------------------------
@given(geometries(), st.data())
@SETTINGS
def test_view_strides_like_torch(geom, data):
    shape, stride, offset = geom
    n = L.numel(shape)
    new = data.draw(factorization(n))
    t = torch_view(shape, stride, offset)
    resolved = L.infer_size(new, n) if n else tuple(new)
    try:
        want = t.view(new)
    except RuntimeError as err:
        assert "view size is not compatible" in str(err) or n == 0
        if "view size is not compatible" in str(err):
            assert L.view_strides(shape, stride, resolved) is None
        return
    got = L.view_strides(shape, stride, tuple(want.shape))
    assert got is not None
    assert tuple(want.shape) == resolved
    if n:  # a view of the same elements in the same order: compare where the elements lie
        ours = torch.arange(float(max(L.storage_extent(shape, stride, offset), 1))).as_strided(
            want.shape, got, offset)
        assert torch.equal(ours, want)
    else:
        assert got == want.stride()


@pytest.mark.parametrize("shape,stride,new,ok", [
    ((3, 4), (4, 1), (12,), True), ((3, 4), (1, 3), (12,), False), ((3, 4), (1, 3), (4, 3), False),
    ((2, 3, 4), (12, 4, 1), (6, 4), True), ((2, 3, 4), (12, 4, 1), (2, 12), True),
    ((2, 3, 4), (1, 8, 2), (2, 12), True), ((2, 3, 4), (1, 8, 2), (6, 4), False),
    ((4, 1), (1, 7), (2, 2, 1, 1), True), ((3, 4), (0, 1), (12,), False),
    ((3, 4), (0, 1), (3, 2, 2), True), ((), (), (1, 1), True)])
def test_view_strides_cases(shape, stride, new, ok):
    t = torch_view(shape, stride)
    got = L.view_strides(shape, stride, new)
    if ok:
        assert got == t.view(new).stride()
    else:
        assert got is None
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            t.view(new)
