"""Shape family behaviour the op table cannot express: tags, Meta behaviour of data-dependent
ops, result tuple types, in-place version counters, warnings, identity returns, and stability
laws checked with hypothesis against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.dispatch import Tag
from ember.ops import shape as sh
from tests.opinfo import make


@pytest.mark.parametrize("op", [sh._unique2, sh.unique_dim, sh._unique_consecutive,
                                sh.bincount, sh.repeat_interleave])
def test_data_dependent_ops_are_tagged(op):
    assert Tag.data_dependent_output in op.tags


def _meta(*shape, dtype=ember.float32):
    return ember.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("call", [
    lambda: ember.unique(_meta(3, 4)), lambda: ember.unique(_meta(3, 4), dim=0),
    lambda: ember.unique_consecutive(_meta(3, 4)),
    lambda: ember.bincount(_meta(3, dtype=ember.int64)),
])
def test_data_dependent_ops_refuse_meta(call):
    with pytest.raises(NotImplementedError, match="Meta"):
        call()


def test_repeat_interleave_meta_needs_output_size():
    x = ember.empty(2, 3, device="meta")
    reps = ember.empty(2, dtype=ember.int64, device="meta")
    with pytest.raises(RuntimeError, match="without output_size"):
        ember.repeat_interleave(x, reps, 0)
    out = ember.repeat_interleave(x, reps, 0, output_size=7)
    assert out.shape == (7, 3) and out.device.type == "meta"
    assert ember.repeat_interleave(x, 3, 1).shape == (2, 9)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_result_tuples_are_named(device):
    x = ember.empty(3, 4, device=device)
    s, t, k = ember.sort(x), ember.topk(x, 2), ember.kthvalue(x, 1)
    assert (type(s).__name__, type(t).__name__, type(k).__name__) == ("sort", "topk",
                                                                       "kthvalue")
    assert s.values.shape == (3, 4) and s.indices.dtype is ember.int64
    assert t.indices.shape == (3, 2) and k.values.shape == (3,)


@pytest.mark.parametrize("name", ["tril_", "triu_"])
def test_inplace_tri_bumps_version_once_and_refuses_overlap(name):
    x = make((3, 4))
    view = x[1:]
    v = x._version
    assert getattr(x, name)(1) is x
    assert x._version == v + 1 and view._version == v + 1
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        getattr(make((3, 3), layout="expanded"), name)()


@pytest.mark.parametrize("name", ["tril", "triu", "diag", "cat", "histc"])
def test_out_bumps_version(name):
    out = ember.empty(0)
    v = out._version
    x = make((3, 3))
    calls = {"tril": lambda: ember.tril(x, out=out), "triu": lambda: ember.triu(x, out=out),
             "diag": lambda: ember.diag(x, out=out), "cat": lambda: ember.cat([x, x], out=out),
             "histc": lambda: ember.histc(x, 4, out=out)}
    assert calls[name]() is out
    assert out._version == v + 1


def test_cross_without_dim_warns_like_torch():
    sh._cross_warned[0] = False
    a, b = make((4, 3)), make((4, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.cross(a, b)
        ember.cross(a, b)
    assert len(caught) == 1 and "without specifying the dim arg is deprecated" in \
        str(caught[0].message)


def test_meshgrid_without_indexing_warns():
    with pytest.warns(UserWarning, match="indexing argument"):
        ember.meshgrid(ember.ones(2), ember.ones(3))


def test_atleast_returns_input_itself_when_nothing_changes():
    x = make((2, 3))
    assert ember.atleast_1d(x) is x and ember.atleast_2d(x) is x
    assert ember.atleast_1d() == () and ember.broadcast_tensors() == ()


def test_meshgrid_and_broadcast_tensors_are_views():
    a, b = make((3,), layout="strided"), make((4,))
    ga, gb = ember.meshgrid(a, b, indexing="ij")
    ba, bb = ember.broadcast_tensors(a, make((2, 1)))
    for view, src in ((ga, a), (gb, b), (ba, a)):
        assert view.untyped_storage().data_ptr() == src.untyped_storage().data_ptr()
        assert view._version == src._version
    assert ga.stride() == (2, 0) and gb.stride() == (0, 1) and ba.stride() == (0, 2)


def test_broadcast_shapes_returns_size():
    out = ember.broadcast_shapes((2, 1), (3,))
    assert isinstance(out, ember.Size) and out == (2, 3)


def test_cat_empty_list_is_value_error_and_runtime_error():
    for exc in (ValueError, RuntimeError):
        with pytest.raises(exc, match="expected a non-empty list of Tensors"):
            ember.cat([])


def test_cat_on_meta_predicts_promoted_dtype():
    a = ember.empty(2, 3, dtype=ember.int8, device="meta")
    b = ember.empty(1, 3, dtype=ember.float16, device="meta")
    out = ember.cat([a, b, ember.empty(0, device="meta", dtype=ember.int64)])
    assert out.shape == (3, 3) and out.dtype is ember.float16 and out.device.type == "meta"


# -- laws against torch --------------------------------------------------------------------------
_values = st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5, float("nan"), -0.0]), min_size=0,
                   max_size=12)


@settings(max_examples=60, deadline=None)
@given(_values, st.booleans())
def test_stable_sort_matches_torch_exactly(values, descending):
    e = ember.sort(ember.tensor(values, dtype=ember.float32), descending=descending, stable=True)
    t = torch.sort(torch.tensor(values, dtype=torch.float32), descending=descending,
                   stable=True)
    assert e.indices.tolist() == t.indices.tolist()
    np.testing.assert_array_equal(e.values.numpy(), t.values.numpy())


@settings(max_examples=60, deadline=None)
@given(_values, st.booleans())
def test_searchsorted_matches_torch_on_ties_and_nan(values, right):
    seq = sorted(v for v in values if v == v) + [float("nan")] * sum(v != v for v in values)
    probe = [0.0, 1.0, -1.0, float("nan"), 3.0]
    e = ember.searchsorted(ember.tensor(seq, dtype=ember.float32),
                           ember.tensor(probe), right=right)
    t = torch.searchsorted(torch.tensor(seq, dtype=torch.float32), torch.tensor(probe),
                           right=right)
    assert e.tolist() == t.tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=10))
def test_unique_inverse_reconstructs_input(values):
    x = ember.tensor(values)
    uniq, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    assert [uniq.tolist()[i] for i in inverse.tolist()] == values
    assert sum(counts.tolist()) == len(values)
    assert uniq.tolist() == sorted(set(values))


@pytest.mark.parametrize("call", [
    lambda lib, x, o: lib.argsort(x, dim=0, stable=True, out=o[1]),
    lambda lib, x, o: lib.topk(x, 2, out=o), lambda lib, x, o: lib.kthvalue(x, 2, 0, out=o),
    lambda lib, x, o: lib.sort(x, 0, out=o),
])
def test_tuple_and_index_outs_match_torch(call):
    x = make((3, 4), layout="permuted")
    e_out = (ember.empty(0), ember.empty(0, dtype=ember.int64))
    t_out = (torch.empty(0), torch.empty(0, dtype=torch.int64))
    e = call(ember, x, e_out)
    t = call(torch, torch.from_numpy(np.array(x.numpy())), t_out)
    e, t = (e if isinstance(e, tuple) else (e,)), (t if isinstance(t, tuple) else (t,))
    for a, b in zip(e, t):
        assert a.shape == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert e_out[1].shape == tuple(t_out[1].shape)
