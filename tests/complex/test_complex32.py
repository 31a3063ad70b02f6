"""complex32 (chalf) against torch: promotion, creation, views over float16 pairs, casts both
ways, printing, checkpoints both ways, the operators torch's CPU supports on ComplexHalf
(values of contiguous and non-contiguous inputs, computed in complex64 and rounded to float16)
and the ones it refuses (same exception type and message)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")

_RNG = np.random.default_rng(0)
EPS16 = float(np.finfo(np.float16).eps)
NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex32", "complex64", "complex128"]
LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.t(),
    "stepped": lambda x: x[::2, 1:],
}


def _values(shape=(4, 3)) -> np.ndarray:
    return (_RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)).astype(np.complex64)


def _pair(shape=(4, 3), layout="contiguous"):
    a = _values(shape)
    e = ember.tensor(a).to(ember.chalf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.tensor(a).to(torch.chalf)
    return LAYOUTS[layout](e), LAYOUTS[layout](t)


def _np(x) -> np.ndarray:
    """Values as NumPy (complex32 widened to complex64, lazy bits resolved)."""
    x = x.detach()
    if x.dtype in (torch.complex32, ember.complex32):
        x = x.to(torch.complex64 if isinstance(x, torch.Tensor) else ember.complex64)
    if isinstance(x, torch.Tensor) and x.dtype == torch.bfloat16:
        x = x.float()
    return x.resolve_conj().resolve_neg().numpy()


def _name(d) -> str:
    return str(d).split(".")[1]


def _same(e, t, rtol=0.0, atol=0.0) -> None:
    assert _name(e.dtype) == _name(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol, equal_nan=True)


# -- the dtype and promotion ----------------------------------------------------------------------
def test_the_dtype_like_torch():
    assert ember.chalf is ember.complex32 and repr(ember.chalf) == "ember.complex32"
    assert ember.chalf.itemsize == torch.chalf.itemsize == 4
    assert ember.chalf.is_complex and not ember.chalf.is_floating_point
    assert ember.chalf.to_real() is ember.float16 and ember.float16.to_complex() is ember.chalf
    assert ember.promote_types(ember.bfloat16, ember.chalf) is ember.complex64


@pytest.mark.parametrize("other", NAMES)
def test_promote_types_with_every_dtype_like_torch(other):
    for a, b in (("complex32", other), (other, "complex32")):
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert _name(ember.promote_types(getattr(ember, a), getattr(ember, b))) == _name(want)


@pytest.mark.parametrize("other", NAMES)
def test_result_type_with_zero_dim_tensors_and_python_scalars_like_torch(other):
    ex, tx = ember.zeros(2, dtype=ember.chalf), torch.zeros(2, dtype=torch.chalf)
    e0, t0 = ember.tensor(1, dtype=getattr(ember, other)), torch.tensor(1, dtype=getattr(torch, other))
    assert _name(ember.result_type(ex, e0)) == _name(torch.result_type(tx, t0))
    assert _name(ember.result_type(e0, ex)) == _name(torch.result_type(t0, tx))
    ed, td = ember.ones(2, dtype=getattr(ember, other)), torch.ones(2, dtype=getattr(torch, other))
    ec, tc = ember.tensor(1j, dtype=ember.chalf), torch.tensor(1j, dtype=torch.chalf)
    assert _name(ember.result_type(ed, ec)) == _name(torch.result_type(td, tc))
    for s in (True, 2, 1.5, 1j):
        assert _name(ember.result_type(ex, s)) == _name(torch.result_type(tx, s))
        assert _name(ember.result_type(ed, s)) == _name(torch.result_type(td, s))


def test_float16_default_makes_complex32_the_default_complex_dtype():
    old, told = ember.get_default_dtype(), torch.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float16)
        torch.set_default_dtype(torch.float16)
        for data in (1j, [1 + 1j, 2], [[0.5j]]):
            _same(ember.tensor(data), torch.tensor(data))
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(told)


# -- creation, casts, printing --------------------------------------------------------------------
FACTORIES = {
    "zeros": lambda L: L.zeros(2, 3, dtype=L.chalf),
    "ones": lambda L: L.ones(3, dtype=L.chalf),
    "full": lambda L: L.full((2, 2), 1.5 - 2.25j, dtype=L.chalf),
    "tensor": lambda L: L.tensor([1 + 2j, 1 / 3 - 1e5j, -0.001j, 70000], dtype=L.chalf),
    "tensor_nested": lambda L: L.tensor([[1, 2.5], [3j, -4]], dtype=L.chalf),
    "tensor_scalar": lambda L: L.tensor(2 - 1j, dtype=L.chalf),
    "zeros_like": lambda L: L.zeros_like(L.ones(2, dtype=L.chalf)),
    "ones_like_dtype": lambda L: L.ones_like(L.ones(2), dtype=L.chalf),
    "full_like": lambda L: L.full_like(L.ones(3, dtype=L.chalf), 2j),
    "empty_shape": lambda L: L.zeros_like(L.empty(2, 5, dtype=L.chalf)),
    "complex": lambda L: L.complex(L.tensor([1.5, 2], dtype=L.float16),
                                   L.tensor([-1, 0.25], dtype=L.float16)),
    "chalf_method": lambda L: L.tensor([1 / 3 + 2 / 3j]).chalf(),
}


@pytest.mark.parametrize("make", FACTORIES)
def test_factories_like_torch(make):
    e, t = FACTORIES[make](ember), FACTORIES[make](torch)
    _same(e, t)
    assert repr(e).replace("ember.", "torch.") == repr(t)


def test_random_factories_make_complex32():
    for fn in ("randn", "rand"):
        e = getattr(ember, fn)(3, 2, dtype=ember.chalf)
        assert e.dtype is ember.chalf and e.shape == (3, 2)
    assert ember.empty(4, dtype=ember.chalf).untyped_storage().nbytes() == 16


@pytest.mark.parametrize("other", NAMES)
def test_casts_both_ways_like_torch(other):
    a = np.array([1 / 3 + 2 / 3j, -70000 + 1e-8j, 2.5 - 0.5j, 0j])
    ed, td = getattr(ember, other), getattr(torch, other)
    with warnings.catch_warnings():  # discarding imaginary parts warns, in both
        warnings.simplefilter("ignore")
        src_e = ember.tensor(a).to(ed) if ed.is_complex else ember.tensor(a.real).to(ed)
        src_t = torch.tensor(a).to(td) if td.is_complex else torch.tensor(a.real).to(td)
        _same(src_e.to(ember.chalf), src_t.to(torch.chalf))
        ce, ct = ember.tensor(a).to(ember.chalf), torch.tensor(a).to(torch.chalf)
        if other not in ("bool", "uint8", "int8", "int16", "int32", "int64"):  # inf: UB in C
            _same(ce.to(ed), ct.to(td))
        _same(ce[2:].to(ed), ct[2:].to(td))


@pytest.mark.parametrize("shape", [(3,), (2, 3), (40, 40), (1000,)])
def test_printing_like_torch(shape):
    e, t = _pair(shape if len(shape) == 2 else (1, *shape))
    e, t = e.reshape(shape), t.reshape(shape)
    assert repr(e).replace("ember.", "torch.") == repr(t)
    special = [complex("nan+infj"), 65504 + 0.0999j, -0.0 - 1e-5j]
    assert repr(ember.tensor(special, dtype=ember.chalf)).replace("ember.", "torch.") == \
        repr(torch.tensor(special, dtype=torch.chalf))


def test_numpy_refuses_complex32_like_torch():
    e, t = _pair((2,))
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        t.numpy()
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        e.numpy()
    assert e.tolist() == t.tolist() and e[0].item() == t[0].item()


# -- views over float16 pairs ---------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_views_over_the_pairs_like_torch(layout):
    e, t = _pair(layout=layout)
    views = {
        "view_as_real": lambda L, x: L.view_as_real(x),
        "real": lambda L, x: x.real,
        "imag": lambda L, x: x.imag,
        "conj": lambda L, x: x.conj(),
        "conj_imag": lambda L, x: x.conj().imag,
        "slice": lambda L, x: x[1:],
        "roundtrip": lambda L, x: L.view_as_complex(L.view_as_real(x.contiguous())),
    }
    for name, fn in views.items():
        ev, tv = fn(ember, e), fn(torch, t)
        _same(ev, tv)
        assert (ev.is_conj(), ev.is_neg()) == (tv.is_conj(), tv.is_neg()), name
        if name != "roundtrip":
            assert ev.stride() == tv.stride() and ev.storage_offset() == tv.storage_offset()
    # writes through views reach the complex32 tensor, rounded to float16
    for fn in (lambda L, x: x.real.fill_(1 / 3), lambda L, x: x.conj().imag.add_(0.1),
               lambda L, x: L.view_as_real(x)[..., 1].mul_(3),
               lambda L, x: x.conj().copy_(x * (1 - 1j))):
        fn(ember, e)
        fn(torch, t)
        _same(e, t, rtol=EPS16)  # float16 arithmetic on the parts: one rounding each


def test_view_as_complex_of_float16_like_torch():
    a = _RNG.standard_normal((3, 4)).astype(np.float16)
    e, t = ember.tensor(a), torch.tensor(a)
    ec, tc = ember.view_as_complex(e.view(3, 2, 2)), torch.view_as_complex(t.view(3, 2, 2))
    _same(ec, tc)
    assert ec.stride() == tc.stride() and ec.dtype is ember.chalf
    ec[0, 0] = 5 - 6j
    tc[0, 0] = 5 - 6j
    np.testing.assert_array_equal(e.numpy(), t.numpy())


# -- checkpoints ----------------------------------------------------------------------------------
def _bytes(save, obj) -> io.BytesIO:
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return buf


def test_checkpoints_both_ways_with_torch():
    e, t = _pair()
    eobj = {"x": e, "col": e[:, 1], "t": e.t(), "conj": e.conj()}
    tobj = {"x": t, "col": t[:, 1], "t": t.t(), "conj": t.conj()}
    from_ember = torch.load(_bytes(ember.save, eobj), weights_only=True)
    from_torch = ember.load(_bytes(torch.save, tobj))
    for key in eobj:
        _same(from_ember[key], tobj[key])
        _same(from_torch[key], tobj[key])
        assert from_torch[key].stride() == tobj[key].stride()
        assert from_torch[key].is_conj() == from_ember[key].is_conj() == tobj[key].is_conj()
    assert from_torch["col"].untyped_storage().data_ptr() == \
        from_torch["x"].untyped_storage().data_ptr()
    _same(ember.load(_bytes(ember.save, eobj))["t"], t.t())


# -- operators torch's CPU runs on ComplexHalf ----------------------------------------------------
def _f16(L, shape):
    return L.tensor(np.linspace(-2, 2, int(np.prod(shape))).reshape(shape), dtype=L.float16)


OPS = {
    "add": lambda L, x, y: x + y,
    "sub_alpha": lambda L, x, y: L.sub(x, y, alpha=2),
    "mul": lambda L, x, y: x * y,
    "add_scalar": lambda L, x, y: x + 0.1,
    "mul_complex_scalar": lambda L, x, y: x * (0.3 - 1.7j),
    "rsub_scalar": lambda L, x, y: 2 - x,
    "add_float16": lambda L, x, y: x + _f16(L, x.shape),
    "mul_float32_promotes": lambda L, x, y: x * _f16(L, x.shape).float(),
    "add_zero_dim_float64": lambda L, x, y: x + L.tensor(0.5, dtype=L.float64),
    "neg": lambda L, x, y: -x,
    "abs": lambda L, x, y: x.abs(),
    "sgn": lambda L, x, y: x.sgn(),
    "conj_physical": lambda L, x, y: L.conj_physical(x),
    "eq_ne": lambda L, x, y: L.stack([x == y, x != x]),
    "isnan_isfinite": lambda L, x, y: L.stack([x.isnan(), (x * 1e4).isfinite()]),
    "cat": lambda L, x, y: L.cat([x, y, x]),
    "stack": lambda L, x, y: L.stack([x, y]),
    "clone": lambda L, x, y: x.clone(),
    "contiguous": lambda L, x, y: x.contiguous(),
    "index": lambda L, x, y: x[L.tensor([1, 0, 1])],
    "masked_fill": lambda L, x, y: x.masked_fill(x.real > 0, 2 - 1j),
    "where": lambda L, x, y: L.where(x.imag > 0, x, y),
    "index_select": lambda L, x, y: x.index_select(1, L.tensor([1, 0])),
    "masked_select": lambda L, x, y: x.masked_select(x.real > 0),
    "nonzero": lambda L, x, y: (x * (x.real > 0)).nonzero(),
    "any_all": lambda L, x, y: L.stack([x.any(), x.all(), (x * 0).any()]),
    "roll": lambda L, x, y: x.roll(1, 0),
    "flip_rows": lambda L, x, y: x.contiguous().flip(0),
    "repeat": lambda L, x, y: x.repeat(2, 1),
    "tril": lambda L, x, y: x.tril(),
    "diag": lambda L, x, y: L.diag(x[0]),
    "pad": lambda L, x, y: L.nn.functional.pad(x, (1, 2)),
    "addcmul": lambda L, x, y: L.addcmul(x, x, y, value=0.5),
    "isclose": lambda L, x, y: L.isclose(x, x + 1e-4),
    "norm": lambda L, x, y: x.norm(),
    "var_std": lambda L, x, y: L.stack([x.var(), x.std()]),
    "dist": lambda L, x, y: L.dist(x, y),
    "outer": lambda L, x, y: L.outer(x[0], y[0]),
    "fill_": lambda L, x, y: x.clone().fill_(1.3 + 0.2j),
    "zero_": lambda L, x, y: x.clone().zero_(),
    "add_": lambda L, x, y: x.clone().add_(y, alpha=0.5),
    "mul_": lambda L, x, y: x.clone().mul_(y),
    "setitem": lambda L, x, y: (lambda c: (c.__setitem__((0, 1), 7 - 7j), c)[1])(x.clone()),
    "index_put_": lambda L, x, y: x.clone().index_put_((L.tensor([0, 1]),), y[:2]),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", OPS)
def test_supported_operators_like_torch(op, layout):
    x, tx = _pair(layout=layout)
    y, ty = _pair(layout=layout)
    e, t = OPS[op](ember, x, y), OPS[op](torch, tx, ty)
    # torch rounds each operation of a compound op (addcmul, var, norm) to float16; ember
    # rounds the complex64 result once: a few float16 ulps of the magnitudes involved
    scale = float(np.abs(_np(t)).max(initial=1.0)) if t.dtype != torch.bool else 0.0
    _same(e, t, rtol=4 * EPS16, atol=8 * EPS16 * scale)


def test_gradients_like_torch():
    a = _values((3,))
    g = _RNG.standard_normal((3, 2))
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a).to(lib.chalf).requires_grad_()
        y = x * x + x * 0.5
        (lib.view_as_real(y).float() * lib.tensor(g, dtype=lib.float32)).sum().backward()
        assert x.grad.dtype == lib.complex32
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=4 * EPS16, atol=8 * EPS16)


# -- operators torch's CPU refuses ----------------------------------------------------------------
REFUSED = {
    "div": lambda L, x: x / x, "div_trunc": lambda L, x: L.div(x, x, rounding_mode="trunc"),
    "exp": lambda L, x: x.exp(), "log": lambda L, x: x.log(), "sqrt": lambda L, x: x.sqrt(),
    "sin": lambda L, x: x.sin(), "tanh": lambda L, x: x.tanh(), "angle": lambda L, x: x.angle(),
    "sigmoid": lambda L, x: x.sigmoid(), "reciprocal": lambda L, x: x.reciprocal(),
    "pow": lambda L, x: x ** 2, "square": lambda L, x: x.square(), "sum": lambda L, x: x.sum(),
    "mean": lambda L, x: x.mean(), "prod": lambda L, x: x.prod(),
    "cumsum": lambda L, x: x.cumsum(0), "mm": lambda L, x: x @ x.t(),
    "dot": lambda L, x: L.dot(x[0], x[0]), "matmul_1d": lambda L, x: x[0] @ x[0],
    "bmm": lambda L, x: L.bmm(x[None], x.t()[None]), "flip": lambda L, x: x.flip(1),
    "flip_transposed": lambda L, x: x.t().flip(0),
    "equal": lambda L, x: L.equal(x, x), "lerp": lambda L, x: L.lerp(x, x, 0.5),
    "gather": lambda L, x: x.gather(0, L.zeros(1, 3, dtype=L.int64)),
    "take": lambda L, x: x.take(L.tensor([1])), "max": lambda L, x: x.max(),
    "trace": lambda L, x: x.trace(), "vdot": lambda L, x: L.vdot(x[0], x[0]),
    "sort": lambda L, x: x.sort(), "fft": lambda L, x: L.fft.fft(x),
    "arange": lambda L, x: L.arange(3, dtype=L.chalf),
    "linspace": lambda L, x: L.linspace(0, 1, 3, dtype=L.chalf),
    "eye": lambda L, x: L.eye(2, dtype=L.chalf),
    "polar": lambda L, x: L.polar(x.real.contiguous(), x.imag.contiguous()),
}


@pytest.mark.parametrize("op", REFUSED)
def test_refused_operators_like_torch(op):
    x, tx = _pair()
    with pytest.raises(Exception) as te:
        REFUSED[op](torch, tx)
    with pytest.raises(type(te.value)) as ee:
        REFUSED[op](ember, x)
    if op == "equal":  # torch names one of two kernels, by a check on its inputs
        assert str(ee.value) == "\"equal_cpu\" not implemented for 'ComplexHalf'"
    else:
        assert str(ee.value) == str(te.value)
    assert x.tolist() == tx.tolist()  # nothing changed on the way


@pytest.mark.xfail(strict=True, reason="a float16 tensor with a complex Python scalar gives "
                   "complex32 in torch; ember refuses it (no complex32 tensor routes the op)")
def test_float16_tensor_with_complex_scalar():
    _same(ember.ones(2, dtype=ember.float16) * 1j, torch.ones(2, dtype=torch.float16) * 1j)


def test_first_complex32_tensor_warns_once_like_torch(monkeypatch):
    import sys
    monkeypatch.setattr(sys.modules["ember.tensor.tensor"], "_chalf_warned", False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ember.zeros(2, dtype=ember.chalf)
        ember.ones(2).chalf()
        ember.empty(1) + 1  # other dtypes never warn
    assert [str(w.message) for w in seen] == \
        ["ComplexHalf support is experimental and many operators don't support it yet."]
