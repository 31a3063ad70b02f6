"""``repr`` of ember tensors equals torch's (with "torch." spelled "ember.")."""

from __future__ import annotations

import math

import ml_dtypes
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.tensor.printing import get_printoptions, set_printoptions

NAN, INF = math.nan, math.inf


def to_ember(t: torch.Tensor) -> ember.Tensor:
    """An ember tensor with the same values, dtype, shape and strides as ``t``."""
    d = t.detach()
    if t.dtype is torch.bfloat16:
        arr = d.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    else:
        arr = d.numpy()
    out = ember.from_numpy(arr)
    assert out.shape == t.shape and (t.numel() == 0 or out.stride() == t.stride())
    return out.requires_grad_(t.requires_grad)


def check(t: torch.Tensor) -> None:
    expected = repr(t).replace("torch.", "ember.")
    assert repr(to_ember(t)) == expected


FLOAT_VALUES = {
    "int_mode": [1.0, 2.0],
    "int_mode_neg": [-1.0, 20.0, 300.0],
    "neg_zero": [-0.0, 0.0],
    "fixed": [0.1, -2.5],
    "fixed_mixed": [1.0, 2.5, -3.25, 100.0],
    "sci_ratio": [1.0, 2000.5],
    "sci_ratio_int": [1.0, 2000.0],
    "sci_big": [1e9, 2e9],
    "sci_small": [1e-5, 2e-5],
    "tiny_neg": [-1e-5, 1.0],
    "nan_inf_int": [NAN, INF, -INF, 1.0],
    "nan_inf_fixed": [NAN, INF, -INF, 1.5],
    "nan_inf_sci": [NAN, 1e-7, -INF],
    "all_nan": [NAN, NAN],
    "all_zero": [0.0, 0.0, 0.0],
    "inf_only": [INF, -INF],
    "pi": [math.pi, -math.e, 1e3],
    "border_1e8": [1e8, 1.0],
    "border_ratio": [1.0, 1000.0],
    "border_small": [1e-4, 2e-4],
    "long_row": [float(i) / 7 for i in range(30)],
    "long_int_row": [float(i * 1001) for i in range(25)],
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(FLOAT_VALUES))
def test_float_vectors(name, dtype):
    check(torch.tensor(FLOAT_VALUES[name], dtype=dtype))


@pytest.mark.parametrize("value", [1.5, -1.5, 0.0, -0.0, 3.0, 1e-7, 1e10, NAN, INF, -INF, 0.1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_zero_dim_floats(value, dtype):
    check(torch.tensor(value, dtype=dtype))


INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integers(dtype):
    check(torch.tensor([1, 20, 3, 100], dtype=dtype))
    check(torch.tensor(7, dtype=dtype))
    check(torch.arange(60, dtype=dtype).reshape(3, 4, 5))
    if dtype is not torch.uint8:
        check(torch.tensor([-5, 100, 0], dtype=dtype))
    info = torch.iinfo(dtype)
    check(torch.tensor([info.min, info.max], dtype=dtype))


def test_bool():
    check(torch.tensor([True, False, True]))
    check(torch.tensor([True, True]))
    check(torch.tensor(False))
    check(torch.tensor([[True, False], [False, False]]))
    check(torch.ones(2000, dtype=torch.bool))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4), (0, 0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool,
                                   torch.bfloat16, torch.uint8])
def test_empty(shape, dtype):
    check(torch.zeros(shape, dtype=dtype))


@pytest.mark.parametrize("shape", [(2, 3), (3, 1), (1, 3), (2, 3, 4), (2, 1, 2, 3), (4, 2, 1, 1),
                                   (1, 1, 1)])
def test_multidim(shape):
    g = torch.Generator().manual_seed(0)
    check(torch.randn(shape, generator=g))
    check(torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape))
    check(torch.arange(math.prod(shape)).reshape(shape) - 3)


def test_non_contiguous():
    base = torch.arange(24.0).reshape(2, 3, 4) / 3
    check(base.transpose(0, 2))
    check(base[:, ::2, 1:])
    check(base.permute(1, 2, 0))


@pytest.mark.parametrize("shape", [(1001,), (2000,), (40, 40), (5, 300), (300, 5), (11, 11, 11),
                                   (2, 2, 2, 200)])
def test_summarized(shape):
    g = torch.Generator().manual_seed(1)
    check(torch.randn(shape, generator=g))
    check(torch.arange(math.prod(shape)).reshape(shape))
    check(torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape))


def test_summarized_formatter_uses_edges_only():
    # The middle value would force scientific mode if it were looked at.
    t = torch.ones(2001)
    t[1000] = 1e12
    check(t)


def test_line_wrapping():
    check(torch.arange(100.0) / 3)
    check(torch.arange(40.0).reshape(2, 20) * 1e6)
    check(torch.arange(50))
    check(torch.full((3, 30), -1.25))


def test_requires_grad_suffix():
    check(torch.tensor([1.0, 2.0], requires_grad=True))
    check(torch.tensor(2.5, dtype=torch.float64, requires_grad=True))
    check(torch.zeros(0, 2, requires_grad=True))
    assert repr(ember.tensor([1.0, 2.0]).requires_grad_()) == "tensor([1., 2.], requires_grad=True)"


def test_suffix_wraps_past_linewidth():
    check(torch.arange(30.0).reshape(3, 10) / 7)
    check((torch.arange(9.0) / 7).double().requires_grad_())
    check(torch.arange(12.0, dtype=torch.float64) / 7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.bool, torch.bfloat16])
@pytest.mark.parametrize("shape", [(2, 3), (0,), ()])
def test_meta(shape, dtype):
    expected = repr(torch.empty(shape, dtype=dtype, device="meta")).replace("torch.", "ember.")
    edt = getattr(ember, str(dtype).split(".")[1])
    assert repr(ember.empty(shape, dtype=edt, device="meta")) == expected


def test_acceptance_examples():
    assert repr(ember.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ember.tensor([0.1, -2.5])) == "tensor([ 0.1000, -2.5000])"
    assert repr(ember.tensor(1.5)) == "tensor(1.5000)"
    assert repr(ember.tensor([])) == "tensor([])"
    assert repr(ember.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(ember.zeros(2, dtype=ember.float64)) == "tensor([0., 0.], dtype=ember.float64)"
    assert repr(ember.zeros(2, dtype=ember.int64)) == "tensor([0, 0])"
    assert repr(ember.zeros(0, dtype=ember.int64)) == "tensor([], dtype=ember.int64)"


def test_default_dtype_changes_suffixes():
    old = ember.get_default_dtype()
    torch_old = torch.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        for t in (torch.tensor([1.5, 2.0]), torch.tensor([1.5], dtype=torch.float32),
                  torch.zeros(0), torch.zeros(0, dtype=torch.float32)):
            check(t)
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch_old)


def test_printoptions():
    saved = get_printoptions()
    try:
        for kwargs in (dict(precision=2), dict(sci_mode=True), dict(sci_mode=False),
                       dict(linewidth=40), dict(threshold=5, edgeitems=1), dict(profile="short"),
                       dict(profile="full")):
            torch.set_printoptions(**kwargs)
            set_printoptions(**kwargs)
            for t in (torch.arange(30.0) / 7, torch.tensor([1e-6, 1.0]),
                      torch.arange(64).reshape(4, 16), torch.arange(1200.0)):
                check(t)
            torch.set_printoptions(profile="default", sci_mode=None)
            set_printoptions(profile="default")
        with pytest.raises(ValueError, match="profile"):
            set_printoptions(profile="tall")
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)
        set_printoptions(**{k: v for k, v in saved.items()})
    assert get_printoptions() == saved


def test_str_equals_repr():
    t = ember.tensor([[1.0, 2.5], [3.0, 4.0]])
    assert str(t) == repr(t)


SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-5, 123456.0, 1e9, -7.25, NAN, INF, -INF, 0.1]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_tensors_print_like_torch(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=0, max_size=3)))
    n = math.prod(shape)
    values = data.draw(st.lists(
        st.one_of(st.sampled_from(SPECIALS), st.floats(-1e6, 1e6, width=32),
                  st.integers(-300, 300).map(float)),
        min_size=n, max_size=n))
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64, torch.float16,
                                       torch.bfloat16]))
    check(torch.tensor(values, dtype=dtype).reshape(shape))
