"""Complex dtypes against torch: creation, printing, parts as views, view_as_real/complex,
complex()/polar, the conjugation bit, NumPy interop and checkpoints in both directions."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import ember
import ember.serialization as es
from ember.serialization import safetensors as est

_RNG = np.random.default_rng(0)
CDTYPES = ["complex64", "complex128"]


def _values(name: str, shape) -> np.ndarray:
    return (_RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)).astype(name)


def _pair(name: str, shape=(3, 4)):
    a = _values(name, shape)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _same(e: ember.Tensor, t: torch.Tensor) -> None:
    assert str(e.dtype).replace("ember.", "torch.") == str(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.resolve_conj().resolve_neg().numpy(),
                                  t.resolve_conj().resolve_neg().numpy())


# -- creation and printing ------------------------------------------------------------------
@pytest.mark.parametrize("data", [[1 + 2j, 3.5 - 1e-3j], [[1j, 2], [3, 4.5]], 2 - 1j, [0j],
                                  [complex("nan+infj"), -0.0 - 0.0j], [1e10j, 1e-10 + 0j]],
                         ids=repr)
@pytest.mark.parametrize("name", [None, *CDTYPES])
def test_tensor_and_repr_like_torch(data, name):
    e = ember.tensor(data, dtype=None if name is None else getattr(ember, name))
    t = torch.tensor(data, dtype=None if name is None else getattr(torch, name))
    _same(e, t)
    assert repr(e).replace("ember.", "torch.") == repr(t)


@pytest.mark.parametrize("name", CDTYPES)
def test_repr_summarised_and_wrapped_like_torch(name):
    for shape in [(40, 40), (3, 30), (2000,)]:
        e, t = _pair(name, shape)
        assert repr(e).replace("ember.", "torch.") == repr(t)


@pytest.mark.parametrize("name", CDTYPES)
def test_factories(name):
    d, td = getattr(ember, name), getattr(torch, name)
    for fn in ("zeros", "ones"):
        _same(getattr(ember, fn)(2, 3, dtype=d), getattr(torch, fn)(2, 3, dtype=td))
    _same(ember.full((2,), 1 - 2j, dtype=d), torch.full((2,), 1 - 2j, dtype=td))
    assert ember.empty(2, dtype=d).dtype is d
    assert ember.full((2,), 1j).dtype is ember.complex64  # the default complex dtype
    assert ember.zeros(2).to(d).dtype is d and ember.ones(1).cfloat().dtype is ember.complex64
    assert ember.ones(1).cdouble().dtype is ember.complex128


@pytest.mark.parametrize("name", CDTYPES)
def test_randn_draws_parts_of_variance_one_half(name):
    n = 40000
    z = ember.randn(n, dtype=getattr(ember, name)).numpy()
    # the sample variance of n normals has standard deviation ~ sqrt(2/n) * variance
    tol = 6 * np.sqrt(2.0 / n) * 0.5
    assert abs(z.real.var() - 0.5) < tol and abs(z.imag.var() - 0.5) < tol
    assert abs(np.mean(np.abs(z) ** 2) - 1.0) < 2 * tol
    assert abs(np.mean(z.real * z.imag)) < 6 * 0.5 / np.sqrt(n)  # independent parts


def test_requires_grad_on_complex_and_is_complex():
    z = ember.zeros(2, dtype=ember.complex64, requires_grad=True)
    assert z.requires_grad and z.is_complex() and ember.is_complex(z)
    assert not ember.ones(1).is_complex()
    assert ember.finfo(ember.complex64).eps == torch.finfo(torch.complex64).eps


# -- NumPy interop -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CDTYPES)
def test_from_numpy_and_numpy_share_memory(name):
    a = _values(name, (2, 3))
    e = ember.from_numpy(a)
    assert e.dtype is getattr(ember, name)
    a[0, 0] = 7 + 7j
    assert e[0, 0].item() == 7 + 7j
    e.numpy()[1, 2] = -1j
    assert a[1, 2] == -1j
    assert e.tolist() == a.tolist()


# -- parts as views ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CDTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "offset"])
def test_real_imag_view_as_real_are_views_like_torch(name, layout):
    e, t = _pair(name)
    pick = {"contiguous": lambda x: x, "transposed": lambda x: x.t(),
            "stepped": lambda x: x[:, ::2], "offset": lambda x: x[1:, 1:]}[layout]
    e, t = pick(e), pick(t)
    for fn in (lambda x: x.real, lambda x: x.imag, torch_or_ember("view_as_real")):
        ev, tv = fn(e), fn(t)
        assert ev.stride() == tv.stride() and ev.storage_offset() == tv.storage_offset()
        _same(ev, tv)
        assert ev.untyped_storage().data_ptr() == e.untyped_storage().data_ptr()
    e.real[0] = 5.0
    e.imag[0] = -3.0
    t.real[0] = 5.0
    t.imag[0] = -3.0
    _same(e, t)


def torch_or_ember(name):
    return lambda x: getattr(ember if isinstance(x, ember.Tensor) else torch, name)(x)


def test_real_of_real_is_itself_imag_of_real_raises():
    x = ember.ones(2)
    assert ember.real(x) is x and x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        x.imag  # noqa: B018
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        ember.view_as_real(x)


def test_real_imag_setters_write_through():
    x = ember.zeros(2, dtype=ember.complex64)
    x.real = ember.tensor([1.0, 2.0])
    x.imag = ember.tensor([3.0, 4.0])
    assert x.tolist() == [1 + 3j, 2 + 4j]


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_view_as_complex_like_torch(name):
    a = _RNG.standard_normal((3, 4, 2)).astype(name)
    e, t = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    ev, tv = ember.view_as_complex(e), torch.view_as_complex(t)
    _same(ev, tv)
    assert ev.stride() == tv.stride()
    assert ev.untyped_storage().data_ptr() == e.untyped_storage().data_ptr()
    _same(ember.view_as_complex(e[1:]), torch.view_as_complex(t[1:]))


@pytest.mark.parametrize("make", [
    lambda lib: lib.ones(3, 2, dtype=lib.int64),
    lambda lib: lib.ones(()),
    lambda lib: lib.ones(3, 3),
    lambda lib: lib.ones(2, 3).t(),
    lambda lib: lib.ones(3, 2, 2)[:, :, :].transpose(1, 2).contiguous().as_strided((2, 2), (3, 1)),
    lambda lib: lib.ones(7)[1:].view(3, 2),
], ids=["int", "0d", "size3", "stride", "odd_stride", "odd_offset"])
def test_view_as_complex_errors_like_torch(make):
    with pytest.raises(RuntimeError) as te:
        torch.view_as_complex(make(torch))
    with pytest.raises(RuntimeError) as ee:
        ember.view_as_complex(make(ember))
    # the same gist: the first clause of torch's message
    assert str(te.value).split(",")[0].split(" but ")[0] in str(ee.value)


def test_view_as_real_of_conj_raises_like_torch():
    x = ember.tensor([1 + 1j]).conj()
    with pytest.raises(RuntimeError, match="unresolved conjugated tensors"):
        ember.view_as_real(x)


# -- complex() and polar() -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_complex_and_polar_like_torch(name):
    a = _RNG.standard_normal((2, 1)).astype(name)
    b = _RNG.standard_normal((3,)).astype(name)
    ea, eb, ta, tb = (ember.from_numpy(a), ember.from_numpy(b), torch.from_numpy(a),
                      torch.from_numpy(b))
    _same(ember.complex(ea, eb), torch.complex(ta, tb))
    got, want = ember.polar(ea.abs(), eb), torch.polar(ta.abs(), tb)
    eps = np.finfo(name).eps
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=8 * eps, atol=8 * eps)
    assert got.dtype is getattr(ember, "complex64" if name == "float32" else "complex128")


@pytest.mark.parametrize("fn", ["complex", "polar"])
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("int64", "int64")])
def test_complex_and_polar_errors_like_torch(fn, dtypes):
    def args(lib):
        return [lib.ones(2, dtype=getattr(lib, d)) for d in dtypes]

    with pytest.raises(RuntimeError) as te:
        getattr(torch, fn)(*args(torch))
    with pytest.raises(RuntimeError) as ee:
        getattr(ember, fn)(*args(ember))
    assert str(ee.value) == str(te.value)


# -- the conjugation bit -------------------------------------------------------------------------
@pytest.mark.parametrize("name", CDTYPES)
def test_conj_is_a_lazy_view(name):
    e, t = _pair(name)
    ec, tc = e.conj(), t.conj()
    assert ec.is_conj() and tc.is_conj()
    assert ec.data_ptr() == e.data_ptr()
    _same(ec, tc)
    _same(ec.t()[1:], tc.t()[1:])  # views keep the bit
    assert ec.t().is_conj()
    assert not ec.conj().is_conj()
    r = ec.resolve_conj()
    assert not r.is_conj() and r.data_ptr() != e.data_ptr()
    _same(r, tc.resolve_conj())
    p = ember.conj_physical(e)
    assert not p.is_conj()
    _same(p, torch.conj_physical(t))
    _same(ec.real, tc.real)
    _same(ec.imag, tc.imag)
    assert repr(ec).replace("ember.", "torch.") == repr(tc)


def test_conj_of_real_is_the_tensor_itself():
    x = ember.ones(2)
    assert x.conj() is x and not x.conj().is_conj()
    assert ember.resolve_conj(x) is x and ember.conj_physical(x) is x


def test_conj_physical_in_place_and_numpy_refuses_conj():
    x = ember.tensor([1 + 2j, 3 - 4j])
    assert x.conj_physical_() is x and x.tolist() == [1 - 2j, 3 + 4j]
    with pytest.raises(RuntimeError, match="conjugate bit set"):
        x.conj().numpy()
    assert x.conj().resolve_conj().numpy().tolist() == [1 + 2j, 3 - 4j]


# -- checkpoints ---------------------------------------------------------------------------------
def _bytes(save, obj, **kw) -> io.BytesIO:
    buf = io.BytesIO()
    save(obj, buf, **kw)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("name", CDTYPES)
def test_ember_save_torch_load(name):
    e = ember.from_numpy(_values(name, (3, 4)))
    obj = {"a": e, "col": e[:, 1], "t": e.t(), "conj": e.conj()}
    out = torch.load(_bytes(ember.save, obj), weights_only=True)
    for key, value in obj.items():
        _same(value, out[key])
    assert out["conj"].is_conj() and out["conj"].data_ptr() == out["a"].data_ptr()


@pytest.mark.parametrize("name", CDTYPES)
def test_torch_save_ember_load(name):
    t = torch.from_numpy(_values(name, (3, 4)))
    obj = {"a": t, "col": t[:, 1], "t": t.t(), "conj": t.conj()}
    out = es.load(_bytes(torch.save, obj))
    for key, value in obj.items():
        _same(out[key], value)
    assert out["conj"].is_conj() and out["conj"].data_ptr() == out["a"].data_ptr()


def test_safetensors_complex64_and_complex128_refused(tmp_path):
    from safetensors.torch import load_file, save_file
    e = ember.from_numpy(_values("complex64", (2, 3)))
    est.save_file({"z": e}, str(tmp_path / "e.safetensors"))
    _same(e, load_file(str(tmp_path / "e.safetensors"))["z"])
    t = torch.from_numpy(_values("complex64", (4,)))
    save_file({"z": t}, str(tmp_path / "t.safetensors"))
    _same(est.load_file(str(tmp_path / "t.safetensors"))["z"], t)
    with pytest.raises(est.SafetensorError, match="C64"):
        est.save_file({"z": ember.zeros(2, dtype=ember.complex128)}, str(tmp_path / "x"))
