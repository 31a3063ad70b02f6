"""Advanced indexing beyond the op table: random index combinations against torch, storage
and version-counter effects of ``__setitem__``, Meta behaviour of data-dependent ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.dispatch import Tag
from ember.ops import scatter_gather as sg
from tests.opinfo import to_torch


# -- random index combinations ----------------------------------------------------------------
@st.composite
def index_case(draw):
    """A shape and an index tuple mixing ints, slices, None, ..., lists, bools, tensors, masks."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    items, dim, used_ellipsis = [], 0, False
    n_adv = draw(st.integers(1, 3))
    adv_len = draw(st.integers(1, 3))
    while dim < len(shape) and len(items) < 6:
        size = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "none", "tensor", "list", "mask", "bool",
                                     "ellipsis", "tensor"]))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
            dim += 1
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-size, size)))
            stop = draw(st.one_of(st.none(), st.integers(-size, size)))
            items.append(slice(start, stop, draw(st.one_of(st.none(), st.integers(1, 3)))))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "bool":
            items.append(draw(st.booleans()))
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            items.append(Ellipsis)
            dim = len(shape) - draw(st.integers(0, len(shape) - dim))
        elif kind == "mask":
            k = draw(st.integers(1, len(shape) - dim))
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(shape[dim:dim + k])),
                                 max_size=int(np.prod(shape[dim:dim + k]))))
            items.append(("mask", np.array(bits, bool).reshape(shape[dim:dim + k])))
            dim += k
        elif kind in ("tensor", "list") and n_adv > 0:
            n_adv -= 1
            values = draw(st.lists(st.integers(-size, size - 1), min_size=adv_len,
                                   max_size=adv_len))
            items.append(values if kind == "list" else ("tensor", np.array(values)))
            dim += 1
    return shape, tuple(items)


def _lib_index(items, lib):
    out = []
    for it in items:
        if isinstance(it, tuple):
            out.append(lib.tensor(it[1]) if lib is torch else ember.tensor(it[1]))
        else:
            out.append(it)
    return tuple(out)


def _outcome(fn):
    try:
        return fn(), None
    except (IndexError, RuntimeError, ValueError, TypeError) as e:
        return None, type(e)


@settings(max_examples=60, deadline=None)
@given(index_case(), st.sampled_from(["contiguous", "permuted"]))
def test_getitem_matches_torch(case, layout):
    shape, items = case
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ember.tensor(data) if layout == "contiguous" else \
        ember.tensor(np.ascontiguousarray(data.T)).permute(*reversed(range(len(shape))))
    t = to_torch(x)
    want, t_err = _outcome(lambda: t[_lib_index(items, torch)])
    got, e_err = _outcome(lambda: x[_lib_index(items, ember)])
    assert e_err == t_err, f"{items}: ember raised {e_err}, torch {t_err}"
    if want is not None:
        assert tuple(got.shape) == tuple(want.shape), items
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@settings(max_examples=60, deadline=None)
@given(index_case(), st.booleans())
def test_setitem_matches_torch(case, scalar):
    shape, items = case
    x = ember.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    t = to_torch(x)
    t_idx, e_idx = _lib_index(items, torch), _lib_index(items, ember)
    target, err = _outcome(lambda: t[t_idx])
    if err is not None:
        return
    if _has_duplicates(t, t_idx):
        return  # which duplicate wins is undefined in torch
    value = -7.5 if scalar else torch.randn(target.shape)
    t[t_idx] = value
    before = x._version
    x[e_idx] = value if scalar else ember.tensor(value.numpy())
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x._version == before + 1


def _has_duplicates(t: torch.Tensor, idx) -> bool:
    positions = torch.arange(t.numel()).reshape(t.shape)[idx]
    return positions.numel() != positions.unique().numel()


# -- storage and version counters ----------------------------------------------------------------
def test_advanced_getitem_is_a_copy():
    x = ember.arange(12.0).view(3, 4)
    y = x[ember.tensor([0, 2])]
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    y[0, 0] = 100.0
    assert x[0, 0].item() == 0.0


def test_basic_part_is_still_a_view_before_the_copy():
    x = ember.arange(24.0).view(2, 3, 4)
    ptr = x.untyped_storage().data_ptr()
    assert x[1, ..., 2].untyped_storage().data_ptr() == ptr
    assert x[ember.tensor(1)].untyped_storage().data_ptr() == ptr  # 0-d int tensor selects


def test_setitem_writes_through_views_and_bumps_once():
    base = ember.zeros(4, 5)
    view = base[1:].t()  # (5, 3), non-contiguous
    before = base._version
    view[ember.tensor([0, 4]), 1:] = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert base._version == view._version == before + 1
    expected = np.zeros((4, 5), np.float32)
    expected[2:, 0] = [1.0, 2.0]
    expected[2:, 4] = [3.0, 4.0]
    np.testing.assert_array_equal(base.numpy(), expected)


def test_setitem_with_mask_and_scalar():
    x = ember.tensor([[1.0, -2.0], [-3.0, 4.0]])
    before = x._version
    x[ember.tensor([[False, True], [True, False]])] = 0.0
    assert x.tolist() == [[1.0, 0.0], [0.0, 4.0]]
    assert x._version == before + 1


def test_basic_setitem_bumps_once():
    x = ember.zeros(3, 4)
    before = x._version
    x[1, 1:3] = ember.ones(1, 2)  # leading size-1 dims of the value are ignored
    assert x._version == before + 1
    assert x.numpy()[1].tolist() == [0.0, 1.0, 1.0, 0.0]


def test_setitem_casts_tensor_values():
    # PyTorch 2.13 refuses a value of another dtype with advanced indices; ember casts it.
    x = ember.zeros(3, dtype=ember.int64)
    x[ember.tensor([0, 2])] = ember.tensor([1.9, -2.5], dtype=ember.float64)
    assert x.tolist() == [1, 0, -2]


def test_setitem_duplicate_indices_last_write_wins():
    x = ember.zeros(3)
    x[ember.tensor([1, 1, 1])] = ember.tensor([1.0, 2.0, 3.0])
    assert x.tolist() == [0.0, 3.0, 0.0]


def test_setitem_refuses_expanded_target():
    x = ember.zeros(3, 1).expand(3, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x[ember.tensor([0])] = 1.0


@pytest.mark.parametrize("call", [
    lambda x: x.scatter_(1, ember.tensor([[0]]), 1.0),
    lambda x: x.scatter_add_(1, ember.tensor([[0]]), ember.ones(1, 1)),
    lambda x: x.scatter_reduce_(1, ember.tensor([[0]]), ember.ones(1, 1), "amax"),
    lambda x: x.index_add_(0, ember.tensor([0]), ember.ones(1, 4)),
    lambda x: x.index_copy_(0, ember.tensor([0]), ember.ones(1, 4)),
    lambda x: x.index_fill_(0, ember.tensor([0]), 1.0),
    lambda x: x.index_put_((ember.tensor([0]),), ember.tensor(1.0)),
    lambda x: x.masked_fill_(ember.ones(4, 4, dtype=ember.bool), 1.0),
    lambda x: x.masked_scatter_(ember.ones(4, dtype=ember.bool), ember.ones(16)),
    lambda x: x.put_(ember.tensor([0]), ember.ones(1), accumulate=True),
])
def test_inplace_ops_bump_version_once_and_return_self(call):
    base = ember.zeros(5, 4)
    x = base[1:]
    before = base._version
    assert call(x) is x
    assert base._version == before + 1
    assert base.numpy()[1:].any() and not base.numpy()[0].any()


def test_out_is_resized_and_bumped():
    out = ember.empty(0)
    before = out._version
    r = ember.gather(ember.arange(6.0).view(2, 3), 1, ember.tensor([[2, 0]]), out=out)
    assert r is out and tuple(out.shape) == (1, 2) and out.tolist() == [[2.0, 0.0]]
    assert out._version == before + 1


# -- Meta and data-dependent ops --------------------------------------------------------------
def _meta(*shape, dtype=ember.float32):
    return ember.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("call", [
    lambda: ember.nonzero(_meta(3, 4)),
    lambda: ember.argwhere(_meta(3, 4)),
    lambda: ember.masked_select(_meta(3, 4), _meta(3, 4, dtype=ember.bool)),
    lambda: _meta(3, 4)[_meta(3, 4, dtype=ember.bool)],
])
def test_data_dependent_ops_refuse_meta(call):
    with pytest.raises(NotImplementedError, match="data-dependent"):
        call()


def test_meta_predicts_advanced_shapes():
    x = _meta(2, 3, 4, 5)
    idx = ember.empty(2, 1, dtype=ember.int64, device="meta")
    assert tuple(x[:, idx, :, ember.empty(3, dtype=ember.int64, device="meta")].shape) == \
        (2, 3, 2, 4)
    assert tuple(ember.ops.aten.index(x, [None, idx]).shape) == (2, 2, 1, 4, 5)
    y = _meta(3, 4)
    y[_meta(3, 4, dtype=ember.bool)] = 1.0  # index_put_ needs no data to keep self's shape
    assert y._version == 1


def test_tags():
    for op in (sg.nonzero_op, sg.masked_select, sg.argwhere, sg.index):
        assert Tag.data_dependent_output in op.tags
    assert Tag.inplace in sg.index_put_.tags and Tag.inplace in sg.scatter_.tags


def test_where_condition_matches_torch():
    c = np.array([[0, 1, 0], [2, 0, 3]])
    got = sg.where_condition(ember.tensor(c))
    want = torch.where(torch.tensor(c))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == ember.int64 and g.tolist() == w.tolist()


def test_nonzero_as_tuple_of_scalar():
    got = ember.tensor(5.0).nonzero(as_tuple=True)
    assert len(got) == 1 and got[0].tolist() == [0]
