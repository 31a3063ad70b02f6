"""dtypes: promotion, casting, Python-scalar rules, default dtype and finfo/iinfo equal torch's."""

from __future__ import annotations

import itertools

import pytest
import torch

import ember
from ember.core import dtype as dt

NAMES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
         "bool", "complex32", "complex64", "complex128"]
PAIRS = list(itertools.product(NAMES, NAMES))
def _expect(fn_torch, fn_ember):
    """ember's result name equals torch's (complex32 included)."""
    assert ember_name(fn_ember()) == torch_name(fn_torch())


def E(name):
    return getattr(ember, name)


def T(name):
    return getattr(torch, name)


def ember_name(d) -> str:
    return repr(d).split(".")[1]


def torch_name(d) -> str:
    return str(d).split(".")[1]


def test_all_dtypes_are_exported():
    assert [d.name for d in dt.ALL_DTYPES] == NAMES
    for name in NAMES:
        assert E(name) is getattr(dt, name if name != "bool" else "bool_")
        assert repr(E(name)) == str(T(name)).replace("torch.", "ember.")
        assert E(name).itemsize == T(name).itemsize
        assert E(name).is_floating_point == T(name).is_floating_point
        assert E(name).is_signed == T(name).is_signed
        assert E(name).is_complex == T(name).is_complex
        assert E(name).to_real().name == torch_name(T(name).to_real())
    for alias, name in [("float", "float32"), ("double", "float64"), ("half", "float16"),
                        ("long", "int64"), ("int", "int32"), ("short", "int16"),
                        ("char", "int8"), ("cfloat", "complex64"), ("cdouble", "complex128")]:
        assert getattr(ember, alias) is E(name)


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types(a, b):
    assert ember_name(ember.promote_types(E(a), E(b))) == torch_name(torch.promote_types(T(a), T(b)))


@pytest.mark.parametrize("a,b", PAIRS)
def test_can_cast(a, b):
    assert ember.can_cast(E(a), E(b)) == torch.can_cast(T(a), T(b))


def _tensor(lib, name, ndim):
    shape = (2,) * ndim
    return lib.zeros(shape, dtype=getattr(lib, name))


@pytest.mark.parametrize("a,b", PAIRS)
@pytest.mark.parametrize("ndims", [(1, 1), (1, 0), (0, 1), (0, 0), (2, 0)])
def test_result_type_tensor_tensor(a, b, ndims):
    _expect(lambda: torch.result_type(_tensor(torch, a, ndims[0]), _tensor(torch, b, ndims[1])),
            lambda: ember.result_type(_tensor(ember, a, ndims[0]), _tensor(ember, b, ndims[1])))


SCALARS = [True, False, 0, 1, -3, 300, 1.5, 0.0, -2.0, 1e40, 1j, -2.5 + 0j]


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ndim", [0, 1])
def test_result_type_tensor_scalar(name, scalar, ndim):
    et, tt = _tensor(ember, name, ndim), _tensor(torch, name, ndim)
    _expect(lambda: torch.result_type(tt, scalar), lambda: ember.result_type(et, scalar))
    _expect(lambda: torch.result_type(scalar, tt), lambda: ember.result_type(scalar, et))


@pytest.mark.parametrize("a,b", [(1, 2), (1, 2.5), (True, 1), (True, False), (2.0, True),
                                 (1j, 2), (1j, 2.5), (True, 1j)])
def test_result_type_scalar_scalar(a, b):
    assert ember_name(ember.result_type(a, b)) == torch_name(torch.result_type(a, b))


def test_issue_examples():
    assert ember.result_type(ember.zeros(3, dtype=ember.int8), 1.5) is ember.float32
    assert ember.result_type(ember.zeros(3, dtype=ember.uint8), ember.tensor(0)) is ember.uint8
    assert ember.result_type(ember.zeros(3, dtype=ember.uint8), ember.tensor(0.5)) is ember.float32
    assert ember.result_type(ember.zeros(3, dtype=ember.float16), 1e10) is ember.float16
    assert ember.result_type(ember.tensor(1, dtype=ember.int8), 5) is ember.int8
    assert ember.result_type(ember.zeros(2, dtype=ember.bool), 5) is ember.int64


def test_result_type_follows_default_dtype():
    old, told = ember.get_default_dtype(), torch.get_default_dtype()
    try:
        for name in ("float64", "float16", "bfloat16"):
            ember.set_default_dtype(E(name))
            torch.set_default_dtype(T(name))
            assert ember.get_default_dtype() is E(name)
            for other in NAMES:
                et, tt = _tensor(ember, other, 1), _tensor(torch, other, 1)
                assert ember_name(ember.result_type(et, 2.5)) == \
                    torch_name(torch.result_type(tt, 2.5))
            for other in NAMES:  # float16 makes complex32 the default complex dtype
                et, tt = _tensor(ember, other, 1), _tensor(torch, other, 1)
                _expect(lambda tt=tt: torch.result_type(tt, 1j),
                        lambda et=et: ember.result_type(et, 1j))
            assert ember.tensor(1.5).dtype is E(name)
            assert ember.finfo().dtype == name
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(told)
    assert ember.get_default_dtype() is ember.float32
    assert ember.tensor(1.5).dtype is ember.float32


@pytest.mark.parametrize("name", ["int8", "int64", "uint8", "bool"])
def test_set_default_dtype_rejects_non_floating(name):
    with pytest.raises(TypeError):
        torch.set_default_dtype(T(name))
    with pytest.raises(TypeError):
        ember.set_default_dtype(E(name))
    assert ember.get_default_dtype() is ember.float32


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "complex64",
                                  "complex128"])
def test_finfo(name):
    e, t = ember.finfo(E(name)), torch.finfo(T(name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert e.dtype == t.dtype


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64"])
def test_finfo_resolution(name):
    assert ember.finfo(E(name)).resolution == torch.finfo(T(name)).resolution


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo(name):
    e, t = ember.iinfo(E(name)), torch.iinfo(T(name))
    for attr in ("bits", "min", "max"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert e.dtype == t.dtype


@pytest.mark.parametrize("name", ["int8", "bool"])
def test_finfo_rejects_integral(name):
    with pytest.raises(TypeError):
        torch.finfo(T(name))
    with pytest.raises(TypeError):
        ember.finfo(E(name))


@pytest.mark.parametrize("name", ["float32", "bool"])
def test_iinfo_rejects_non_integral(name):
    with pytest.raises(TypeError):
        torch.iinfo(T(name))
    with pytest.raises(TypeError):
        ember.iinfo(E(name))


def test_dtype_pickles_to_the_singleton():
    import pickle
    for d in dt.ALL_DTYPES:
        assert pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize("default", ["float32", "float64"])
def test_python_complex_makes_the_default_complex_dtype(default):
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(E(default))
        want = "complex64" if default == "float32" else "complex128"
        assert ember.tensor([1 + 2j]).dtype is E(want)
        assert ember.tensor([1, 2.5, 1j]).dtype is E(want)
        assert ember.full((2,), 1j).dtype is E(want)
    finally:
        ember.set_default_dtype(old)


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_complex_dtypes_are_differentiable_not_floating(name):
    assert not E(name).is_floating_point and E(name).is_differentiable
    assert ember.zeros(1, dtype=E(name)).requires_grad_().requires_grad
    assert E(name).to_real().to_complex() is E(name)
