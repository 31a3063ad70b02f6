"""View laws as properties: random chains of view ops agree with torch and alias one storage.

Each example starts from the same tensor in ember and torch, applies a random chain of view
operations to both, and checks after every step: shape, strides, storage offset and values
equal torch's; the result shares the root's storage and version counter and names the root as
its ``_base``; ``is_contiguous()`` agrees; every element lies inside the storage. At the end a
write through the view must land in the root exactly where torch's does.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.core.layout import storage_extent

SETTINGS = settings(max_examples=200, deadline=None)


def _dim(data, nd):
    return data.draw(st.integers(-nd, nd - 1))


def _transpose(data, shape):
    if not shape:
        return None
    a, b = _dim(data, len(shape)), _dim(data, len(shape))
    return f"transpose({a},{b})", lambda lib, x: x.transpose(a, b)


def _permute(data, shape):
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    return f"permute{perm}", lambda lib, x: x.permute(perm)


def _narrow(data, shape):
    if not shape:
        return None
    d = _dim(data, len(shape))
    size = shape[d]
    start = data.draw(st.integers(0, size))
    length = data.draw(st.integers(0, size - start))
    return f"narrow({d},{start},{length})", lambda lib, x: x.narrow(d, start, length)


def _select(data, shape):
    dims = [i for i, s in enumerate(shape) if s > 0]
    if not dims:
        return None
    d = data.draw(st.sampled_from(dims))
    i = data.draw(st.integers(-shape[d], shape[d] - 1))
    return f"select({d},{i})", lambda lib, x: x.select(d, i)


def _slice(data, shape):
    if not shape:
        return None
    d = data.draw(st.integers(0, len(shape) - 1))
    size = shape[d]
    start = data.draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
    stop = data.draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
    step = data.draw(st.integers(1, 3))
    key = (slice(None),) * d + (slice(start, stop, step),)
    return f"[{key}]", lambda lib, x: x[key]


def _index_mix(data, shape):
    if not shape or shape[0] == 0:
        return None
    i = data.draw(st.integers(0, shape[0] - 1))
    key = (i, Ellipsis, None) if data.draw(st.booleans()) else (None, slice(None, None, 2))
    return f"[{key}]", lambda lib, x: x[key]


def _unsqueeze(data, shape):
    d = data.draw(st.integers(-len(shape) - 1, len(shape)))
    return f"unsqueeze({d})", lambda lib, x: x.unsqueeze(d)


def _squeeze(data, shape):
    if data.draw(st.booleans()) or not shape:
        return "squeeze()", lambda lib, x: x.squeeze()
    d = _dim(data, len(shape))
    return f"squeeze({d})", lambda lib, x: x.squeeze(d)


def _expand(data, shape):
    lead = data.draw(st.lists(st.integers(1, 3), max_size=1))
    target = lead + [data.draw(st.sampled_from([s, -1] + ([2, 3] if s == 1 else [])))
                     for s in shape]
    return f"expand{target}", lambda lib, x: x.expand(tuple(target))


def _diagonal(data, shape):
    if len(shape) < 2:
        return None
    a = _dim(data, len(shape))
    b = data.draw(st.sampled_from([d for d in range(len(shape)) if d != a % len(shape)]))
    off = data.draw(st.integers(-3, 3))
    return f"diagonal({off},{a},{b})", lambda lib, x: x.diagonal(off, a, b)


def _unfold(data, shape):
    if not shape:
        return None
    d = _dim(data, len(shape))
    size = data.draw(st.integers(0, shape[d]))
    step = data.draw(st.integers(1, 3))
    return f"unfold({d},{size},{step})", lambda lib, x: x.unfold(d, size, step)


def _view_shape(data, shape):
    n = math.prod(shape)
    if n == 0:
        return (0,) if data.draw(st.booleans()) else tuple(shape)
    parts, m = [], n
    for p in (2, 3, 5, 7):
        while m % p == 0:
            parts.append(p)
            m //= p
    if m > 1:
        parts.append(m)
    parts = list(data.draw(st.permutations(parts)))
    out = []
    while parts:
        k = data.draw(st.integers(1, len(parts)))
        out.append(math.prod(parts[:k]))
        parts = parts[k:]
    if data.draw(st.booleans()):
        out.insert(data.draw(st.integers(0, len(out))), 1)
    if out and data.draw(st.booleans()):
        out[data.draw(st.integers(0, len(out) - 1))] = -1
    return tuple(out)


def _view(data, shape):
    new = _view_shape(data, shape)
    return f"view{new}", lambda lib, x: x.view(new)


def _reshape(data, shape):
    new = _view_shape(data, shape)
    return f"reshape{new}", lambda lib, x: x.reshape(new)


def _split(data, shape):
    if not shape:
        return None
    d = _dim(data, len(shape))
    size = data.draw(st.integers(1, 3))
    parts = max(1, math.ceil(shape[d] / size))
    i = data.draw(st.integers(0, parts - 1))
    return f"split({size},{d})[{i}]", lambda lib, x: x.split(size, d)[i]


def _chunk(data, shape):
    if not shape:
        return None
    d = _dim(data, len(shape))
    n = data.draw(st.integers(1, 4))
    return f"chunk({n},{d})[-1]", lambda lib, x: x.chunk(n, d)[-1]


OPS = [_transpose, _permute, _narrow, _select, _slice, _index_mix, _unsqueeze, _squeeze, _expand,
       _diagonal, _unfold, _view, _reshape, _split, _chunk]


def _root(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    n = math.prod(shape)
    t = torch.arange(float(n)).reshape(shape)
    e = ember.arange(float(n)).reshape(shape)
    return e, t


def _check_same(ev, tv, e_root, name):
    assert ev.shape == tuple(tv.shape), name
    assert ev.dtype is ember.float32
    if tv.numel():
        # Strides of size-1 dims carry no meaning; see test_expand_size_one_strides_like_torch.
        assert _strides(ev) == _strides(tv), name
        assert ev.storage_offset() == tv.storage_offset(), name
    assert ev.is_contiguous() == tv.is_contiguous(), name
    assert ev.tolist() == tv.tolist(), name
    assert ev.untyped_storage().data_ptr() == e_root.untyped_storage().data_ptr(), name
    assert ev._ver is e_root._ver, name
    assert ev._base is (e_root if e_root._base is None else e_root._base), name
    nbytes = storage_extent(ev.shape, ev.stride(), ev.storage_offset()) * ev.element_size()
    assert nbytes <= ev.untyped_storage().nbytes(), name


def _strides(x):
    return tuple(st_ if size != 1 else None for size, st_ in zip(x.shape, x.stride()))


def _apply(fn, lib, x):
    try:
        return fn(lib, x), None
    except (RuntimeError, IndexError, ValueError, TypeError) as err:
        return None, err


@given(st.data())
@SETTINGS
def test_random_view_chains_match_torch(data):
    e_root, t_root = _root(data)
    ev, tv = e_root, t_root
    steps = []
    for _ in range(data.draw(st.integers(1, 6))):
        made = data.draw(st.sampled_from(OPS))(data, tuple(tv.shape))
        if made is None:
            continue
        name, fn = made
        steps.append(name)
        t_out, t_err = _apply(fn, torch, tv)
        e_out, e_err = _apply(fn, ember, ev)
        if t_err is not None:
            assert e_err is not None and isinstance(e_err, type(t_err)), (steps, t_err, e_err)
            continue
        assert e_err is None, (steps, e_err)
        if t_out._base is None and t_out.numel() and not _aliases(t_out, t_root):
            # reshape had to copy: ember copies too, and the chain stops being a view
            assert e_out.untyped_storage().data_ptr() != e_root.untyped_storage().data_ptr()
            assert e_out.tolist() == t_out.tolist()
            return
        ev, tv = e_out, t_out
        _check_same(ev, tv, e_root, steps)
    _check_write(ev, tv, e_root, t_root, data, steps)


def _positions(t):
    """Storage positions of ``t``'s elements, in order."""
    extent = max(storage_extent(tuple(t.shape), t.stride(), t.storage_offset()), 1)
    idx = torch.arange(extent).as_strided(t.shape, t.stride(), t.storage_offset())
    return idx.reshape(-1).tolist()


def _aliases(t, root):
    return t.untyped_storage().data_ptr() == root.untyped_storage().data_ptr()


def _check_write(ev, tv, e_root, t_root, data, steps):
    positions = _positions(tv)
    zero_stride = any(size > 1 and st_ == 0 for size, st_ in zip(tv.shape, tv.stride()))
    if len(set(positions)) < len(positions) and not zero_stride:
        return  # overlapping without a 0 stride (unfold): torch's result is undefined here
    value = data.draw(st.sampled_from([-1.0, 100.0, 0.5]))
    # fill_ on expanded views: see test_fill_expanded_like_torch.
    how = data.draw(st.sampled_from(["add_", "setitem", "copy_"] + ([] if zero_stride
                                                                   else ["fill_"])))
    writes = {"add_": lambda x: x.add_(value), "fill_": lambda x: x.fill_(value),
              "setitem": lambda x: x.__setitem__(..., value),
              "copy_": lambda x: x.copy_(x.clone() * 0 + value)}
    t_out, t_err = _apply(lambda lib, x: writes[how](x), torch, tv)
    e_out, e_err = _apply(lambda lib, x: writes[how](x), ember, ev)
    if t_err is not None:
        assert isinstance(e_err, type(t_err)), (steps, how, t_err, e_err)
        return
    assert e_err is None, (steps, how, e_err)
    assert e_root.tolist() == t_root.tolist(), (steps, how)
    assert ev.tolist() == tv.tolist(), (steps, how)
    assert (e_root._version > 0) == (t_root._version > 0)


@given(st.data())
@SETTINGS
def test_views_visit_each_element_once(data):
    """A view made without expand/unfold visits distinct storage positions inside the storage."""
    e_root, t_root = _root(data)
    ev, tv = e_root, t_root
    for _ in range(data.draw(st.integers(1, 4))):
        made = data.draw(st.sampled_from([o for o in OPS if o not in (_expand, _unfold)]))(
            data, tuple(tv.shape))
        if made is None:
            continue
        e_out, e_err = _apply(made[1], ember, ev)
        t_out, t_err = _apply(made[1], torch, tv)
        if e_err is not None or t_err is not None or e_out.untyped_storage().data_ptr() != \
                e_root.untyped_storage().data_ptr():
            continue
        ev, tv = e_out, t_out
    positions = [int(v) for v in _flat(ev.tolist())]  # the root holds 0..n-1: values = positions
    assert len(set(positions)) == len(positions)
    assert all(0 <= p < e_root.numel() for p in positions)


def _flat(x):
    if isinstance(x, list):
        for item in x:
            yield from _flat(item)
    else:
        yield x


@pytest.mark.parametrize("op", ["t", "T", "mT", "swapaxes", "movedim", "unbind", "flatten",
                                "view_as", "expand_as", "alias", "as_strided", "tensor_split",
                                "unflatten"])
def test_other_view_ops_share_storage(op):
    fns = {"t": lambda lib, x: x[0].t(), "T": lambda lib, x: x.permute(2, 1, 0),
           "mT": lambda lib, x: x.transpose(-2, -1), "swapaxes": lambda lib, x: x.swapaxes(0, 2),
           "movedim": lambda lib, x: x.movedim(0, -1), "unbind": lambda lib, x: x.unbind(1)[2],
           "flatten": lambda lib, x: x.flatten(1), "view_as": lambda lib, x: x.view_as(lib.zeros(24)),
           "expand_as": lambda lib, x: x[:, :1].expand_as(x),
           "alias": lambda lib, x: lib.alias(x) if hasattr(lib, "alias") else x.view_as(x),
           "as_strided": lambda lib, x: x.as_strided((3, 3), (5, 2), 1),
           "tensor_split": lambda lib, x: lib.tensor_split(x, 3, dim=2)[1],
           "unflatten": lambda lib, x: x.unflatten(2, (2, 2))}
    e = ember.arange(24.0).view(2, 3, 4)
    t = torch.arange(24.0).view(2, 3, 4)
    ev, tv = fns[op](ember, e), fns[op](torch, t)
    _check_same(ev, tv, e, op)
    t_out, t_err = _apply(lambda lib, x: x.mul_(-1), torch, tv)
    e_out, e_err = _apply(lambda lib, x: x.mul_(-1), ember, ev)
    assert (e_err is None) == (t_err is None)
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("shape,target", [((1,), (1, 1)), ((3,), (1, 3)), ((2, 3), (1, 2, 3))])
def test_expand_size_one_strides_like_torch(shape, target):
    e = ember.zeros(shape).expand(*target)
    t = torch.zeros(shape).expand(*target)
    assert e.stride() == t.stride()


@pytest.mark.parametrize("op", ["fill_", "zero_"])
def test_fill_expanded_like_torch(op):
    fns = {"fill_": lambda x: x.fill_(2.0), "zero_": lambda x: x.zero_()}
    base = ember.ones(1)
    fns[op](base.expand(3))
    tbase = torch.ones(1)
    fns[op](tbase.expand(3))
    assert base.tolist() == tbase.tolist()
