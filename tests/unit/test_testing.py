"""ember.testing: assert_close agrees with torch.testing.assert_close; make_tensor like torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ember
from ember.testing import assert_close, default_tolerances, make_tensor
from ember.testing._creation import seed

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
          "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def E(name):
    return getattr(ember, name)


def T(name):
    return getattr(torch, name)


def both(values, name):
    t = torch.tensor(values, dtype=T(name))
    return ember.tensor(t.double().tolist() if name == "bfloat16" else t.tolist(), dtype=E(name)), t


def raises(fn) -> bool:
    try:
        fn()
    except AssertionError:
        return True
    return False


@pytest.mark.parametrize("name", DTYPES)
def test_default_tolerances_match_torch(name):
    from torch.testing._comparison import default_tolerances as torch_default
    t = torch.zeros(1, dtype=T(name))
    assert default_tolerances(E(name)) == torch_default(t)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_verdict_equals_torch(data):
    name = data.draw(st.sampled_from(FLOATS))
    n = data.draw(st.integers(1, 4))
    base = data.draw(st.lists(st.one_of(st.floats(-100, 100, width=16), st.sampled_from(
        [0.0, math.nan, math.inf, -math.inf])), min_size=n, max_size=n))
    scale = data.draw(st.sampled_from([0.0, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]))
    noise = [b + scale * (i + 1) if math.isfinite(b) else b for i, b in enumerate(base)]
    if data.draw(st.booleans()):
        noise[0] = data.draw(st.sampled_from([math.nan, math.inf, 0.0]))
    equal_nan = data.draw(st.booleans())
    tols = data.draw(st.sampled_from([None, (0.0, 0.0), (1e-3, 1e-3), (0.5, 0.0)]))
    kw = {} if tols is None else dict(rtol=tols[0], atol=tols[1])
    ea, ta = both(noise, name)
    eb, tb = both(base, name)
    rtol, atol = tols if tols is not None else default_tolerances(E(name))
    a, b = ta.double(), tb.double()
    allowed = atol + rtol * b.abs()
    slack = (a - b).abs() - allowed
    # where rounding in float32 vs float64 could flip the verdict, the libraries may differ
    assume(not bool(((slack.abs() <= 1e-6 * allowed) & (allowed > 0)
                     & torch.isfinite(slack)).any()))
    assert raises(lambda: assert_close(ea, eb, equal_nan=equal_nan, **kw)) == raises(
        lambda: torch.testing.assert_close(ta, tb, equal_nan=equal_nan, **kw))


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8", "bool"])
def test_integral_exact(name):
    ea, ta = both([1, 0, 1], name)
    eb, tb = both([1, 1, 1], name)
    assert raises(lambda: assert_close(ea, eb)) and raises(
        lambda: torch.testing.assert_close(ta, tb))
    assert_close(ea, ea.clone())


def test_message_like_torch():
    with pytest.raises(AssertionError) as err:
        assert_close(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 2.5, 3.1]))
    assert str(err.value) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 2 / 3 (66.7%)\n"
        "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.2 at index (1,) (up to 1.3e-06 allowed)")
    with pytest.raises(AssertionError) as err:
        assert_close(ember.tensor([[1, 2], [3, 4]]), ember.tensor([[1, 2], [3, 9]]))
    assert str(err.value) == (
        "Tensor-likes are not equal!\n\n"
        "Mismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 5 at index (1, 1)\n"
        "Greatest relative difference: 0.5555555555555556 at index (1, 1)")
    with pytest.raises(AssertionError, match=r"absolute difference: nan at index \(1,\)"):
        assert_close(ember.tensor([1.0, math.nan]), ember.tensor([1.0, 2.0]))
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 1 \(100.0%\)"):
        assert_close(ember.tensor(1.0), ember.tensor(2.0))


def test_attributes():
    with pytest.raises(AssertionError, match=r"'shape' do not match: ember.Size\(\[2\]\) != "
                                             r"ember.Size\(\[3\]\)"):
        assert_close(ember.zeros(2), ember.zeros(3))
    with pytest.raises(AssertionError, match="'dtype' do not match: ember.float32 != "
                                             "ember.float64"):
        assert_close(ember.zeros(2), ember.zeros(2, dtype=ember.float64))
    assert_close(ember.zeros(2), ember.zeros(2, dtype=ember.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="device"):
        assert_close(ember.zeros(2), ember.zeros(2, device="meta"))
    assert_close(ember.zeros(2, device="meta"), ember.ones(2, device="meta"))
    x = ember.zeros(2, 3)
    assert_close(x.t(), x.t().contiguous())
    with pytest.raises(AssertionError, match="stride"):
        assert_close(x.t(), x.t().contiguous(), check_stride=True)


def test_msg_and_tolerance_arguments():
    with pytest.raises(AssertionError, match="^boom$"):
        assert_close(ember.zeros(2), ember.ones(2), msg="boom")
    with pytest.raises(AssertionError, match="^wrapped: Tensor-likes"):
        assert_close(ember.zeros(2), ember.ones(2), msg=lambda m: "wrapped: " + m)
    with pytest.raises(ValueError, match="no atol"):
        assert_close(ember.zeros(2), ember.ones(2), rtol=1.0)
    with pytest.raises(ValueError, match="no rtol"):
        assert_close(ember.zeros(2), ember.ones(2), atol=1.0)
    assert_close(ember.zeros(2), ember.ones(2), rtol=0.0, atol=1.0)
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([math.nan]), ember.tensor([math.nan]))
    assert_close(ember.tensor([math.nan]), ember.tensor([math.nan]), equal_nan=True)
    assert_close(ember.tensor([math.inf]), ember.tensor([math.inf]))
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([math.inf]), ember.tensor([-math.inf]))


def test_containers_and_scalars():
    assert_close([ember.zeros(2), 1.0, {"a": 3}], [ember.zeros(2), 1.0, {"a": 3}])
    with pytest.raises(AssertionError, match=r"item \[1\]"):
        assert_close([1.0, 2.0], [1.0, 2.5])
    with pytest.raises(AssertionError, match=r"item \['k'\]\[0\]"):
        assert_close({"k": [ember.zeros(1)]}, {"k": [ember.ones(1)]})
    with pytest.raises(AssertionError, match="length"):
        assert_close([1, 2], [1, 2, 3])
    with pytest.raises(AssertionError, match="type"):
        assert_close(1, 1.0)
    assert_close(1, 1.0, check_dtype=False)
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(ember.zeros(1), [0.0])
    assert_close(np.arange(3.0), np.arange(3.0))


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 5), (1, 4, 3)])
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_make_tensor_geometry_like_torch(name, shape, noncontiguous):
    e = make_tensor(*shape, dtype=E(name), noncontiguous=noncontiguous)
    t = torch.testing.make_tensor(*shape, dtype=T(name), device="cpu",
                                  noncontiguous=noncontiguous)
    assert e.dtype is E(name) and e.shape == tuple(t.shape)
    assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
    assert e.is_contiguous() == t.is_contiguous()


@pytest.mark.parametrize("name", DTYPES)
def test_make_tensor_default_range(name):
    values = np.asarray(make_tensor(4000, dtype=E(name))).astype(np.float64)
    lo, hi = {"bool": (0, 1), "uint8": (0, 9)}.get(
        name, (-9, 9) if name in FLOATS else (-9, 9))
    assert values.min() >= lo and values.max() <= hi
    assert len(np.unique(values)) > (1 if name == "bool" else 5)


@pytest.mark.parametrize("name", DTYPES[:-1])
def test_make_tensor_bounds_and_exclude_zero(name):
    x = np.asarray(make_tensor(500, dtype=E(name), low=2, high=5)).astype(np.float64)
    assert x.min() >= 2 and (x.max() < 5 or name in ("float16", "bfloat16"))
    z = np.asarray(make_tensor(500, dtype=E(name), low=0, high=2, exclude_zero=True))
    assert not np.any(z == 0)
    if name in FLOATS:
        big = np.asarray(make_tensor(50, dtype=E(name), low=-math.inf, high=math.inf))
        assert np.all(np.isfinite(big.astype(np.float64)))
    else:
        x = np.asarray(make_tensor(500, dtype=E(name), low=0.5, high=2.5))
        assert set(np.unique(x).tolist()) <= {1, 2}


@pytest.mark.parametrize("kwargs", [dict(low=3, high=1), dict(low=math.nan),
                                    dict(low=300, high=400), dict(requires_grad=True)])
def test_make_tensor_errors_like_torch(kwargs):
    with pytest.raises(ValueError):
        torch.testing.make_tensor(3, dtype=torch.uint8, device="cpu", **kwargs)
    with pytest.raises(ValueError):
        make_tensor(3, dtype=ember.uint8, **kwargs)


def test_make_tensor_requires_grad_meta_and_determinism():
    x = make_tensor(2, 3, dtype=ember.float32, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    m = make_tensor((2, 3), dtype=ember.int32, device="meta")
    assert m.is_meta and m.shape == (2, 3)
    seed(5)
    a = make_tensor(10, dtype=ember.float64).tolist()
    seed(5)
    assert make_tensor(10, dtype=ember.float64).tolist() == a
    assert make_tensor(10, dtype=ember.float64).tolist() != a


def test_make_tensor_leaves_the_global_rng_alone():
    ember.manual_seed(3)
    want = ember.rand(4).tolist()
    ember.manual_seed(3)
    make_tensor(10, dtype=ember.float32)
    assert ember.rand(4).tolist() == want
    assert make_tensor(3, dtype=ember.float32)._version == 0


def test_assert_close_compares_imaginary_parts_as_torch():
    a, b = ember.tensor([1 + 1j]), ember.tensor([1 + 2j])
    with pytest.raises(AssertionError) as ours:
        ember.testing.assert_close(a, b)
    with pytest.raises(AssertionError) as theirs:
        torch.testing.assert_close(torch.tensor([1 + 1j]), torch.tensor([1 + 2j]))
    assert str(ours.value).splitlines()[:4] == str(theirs.value).splitlines()[:4]
    ember.testing.assert_close(a, ember.tensor([1 + 1j + 1e-7j]))
    ember.testing.assert_close(ember.tensor([complex("nan+1j")]),
                               ember.tensor([complex("1+nanj")]), equal_nan=True)
