"""The negative bit against torch: ``x.conj().imag`` and ``_neg_view`` are views that read the
negated stored values, inherit the bit through views, compose with the conjugation bit, write
through with the sign applied (in place, ``copy_``, indexing, part setters), resolve on clone,
refuse ``numpy()``, keep the bit in checkpoints both ways, and differentiate as torch does."""

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
# Layouts of the complex base: contiguous, transposed, sliced with a step.
LAYOUTS = {
    "contiguous": lambda L, a: a,
    "transposed": lambda L, a: a.t(),
    "stepped": lambda L, a: a[::2, 1:],
}


def _values(name: str, shape=(4, 3)) -> np.ndarray:
    return (_RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)).astype(name)


def _pair(name: str, shape=(4, 3)):
    a = _values(name, shape)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _np(t) -> np.ndarray:
    return t.detach().resolve_conj().resolve_neg().numpy()


def _same(e: ember.Tensor, t: torch.Tensor, *, bits: bool = True, strides: bool = True) -> None:
    assert str(e.dtype).replace("ember.", "torch.") == str(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    if strides:
        assert tuple(e.stride()) == tuple(t.stride())
    if bits:
        assert (e.is_neg(), e.is_conj()) == (t.is_neg(), t.is_conj())
    np.testing.assert_array_equal(_np(e), _np(t))


def _both(name, layout, fn):
    """``fn(lib, x)`` on the same complex values in ember and torch; ``(ex, tx, e, t)``."""
    e, t = _pair(name)
    ex, tx = LAYOUTS[layout](ember, e), LAYOUTS[layout](torch, t)
    return e, t, fn(ember, ex), fn(torch, tx)


# -- reading --------------------------------------------------------------------------------------
VIEWS = {
    "conj_imag": lambda L, x: x.conj().imag,
    "conj_real": lambda L, x: x.conj().real,
    "neg_view": lambda L, x: L._neg_view(x),
    "neg_view_twice": lambda L, x: L._neg_view(L._neg_view(x)),
    "neg_view_imag": lambda L, x: L._neg_view(x).imag,
    "neg_view_real": lambda L, x: L._neg_view(x).real,
    "neg_conj": lambda L, x: L._neg_view(x).conj(),
    "neg_conj_imag": lambda L, x: L._neg_view(x).conj().imag,
    "neg_conj_real": lambda L, x: L._neg_view(x).conj().real,
    "conj_conj_imag": lambda L, x: x.conj().conj().imag,
    "neg_view_as_real": lambda L, x: L.view_as_real(L._neg_view(x)),
    "imag_neg_view": lambda L, x: L._neg_view(x.imag),
    "imag_of_conj_conj": lambda L, x: x.conj().imag.conj(),
    # views of views keep the bit
    "slice": lambda L, x: x.conj().imag[1:, ::2],
    "transpose": lambda L, x: x.conj().imag.t(),
    "select": lambda L, x: x.conj().imag[1],
    "unsqueeze_expand": lambda L, x: x.conj().imag.unsqueeze(0).expand(2, -1, -1),
    "detach": lambda L, x: x.conj().imag.detach(),
    "data": lambda L, x: x.conj().imag.data,
    "diagonal": lambda L, x: x.conj().imag.diagonal(),
    "as_strided": lambda L, x: x.conj().imag.as_strided((2,), (1,)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", CDTYPES)
def test_views_read_and_carry_the_bit_like_torch(name, layout, view):
    e, t, ev, tv = _both(name, layout, VIEWS[view])
    _same(ev, tv)
    assert (ev.data_ptr() - e.data_ptr()) == (tv.data_ptr() - t.data_ptr())
    assert repr(ev).replace("ember.", "torch.") == repr(tv)


def test_imag_of_conj_is_a_view_of_the_base_with_the_bit():
    x = ember.tensor([1 + 2j, 3 - 4j])
    y = x.conj().imag
    assert y.is_neg() and not x.is_neg() and not x.conj().real.is_neg()
    assert y._base is x and y.storage_offset() == 1 and y.stride() == (2,)
    assert y.tolist() == [-2.0, 4.0] and y[0].item() == -2.0
    assert not ember.tensor([1.0]).is_neg() and ember.is_neg(y)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", CDTYPES)
def test_computing_with_a_negative_view_reads_its_values(name, layout):
    def fn(L, x):
        y = x.conj().imag
        return [y + 1, y * y, y.sum(0), y.t() @ y, L.neg(y), y.abs(), y.to(L.float64),
                L.where(y > 0, y, L._neg_view(y))]
    _, _, es_, ts = _both(name, layout, fn)
    for ev, tv in zip(es_, ts):
        assert (ev.is_neg(), ev.dtype is ember.float64) == (tv.is_neg(), tv.dtype is torch.float64)
        np.testing.assert_allclose(_np(ev), _np(tv), rtol=8 * np.finfo(_np(ev).dtype).eps,
                                   atol=0)


def test_integer_and_bool_negative_views_like_torch():
    for dtype in ("int64", "int8", "uint8", "float16"):
        e = ember._neg_view(ember.tensor([1, 2, 0], dtype=getattr(ember, dtype)))
        t = torch._neg_view(torch.tensor([1, 2, 0], dtype=getattr(torch, dtype)))
        _same(e, t)
        _same(e.clone(), t.clone())
    eb, tb = ember._neg_view(ember.tensor([True])), torch._neg_view(torch.tensor([True]))
    assert eb.is_neg() and tb.is_neg()
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        eb.clone()
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        tb.clone()


# -- resolving ------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_resolving_like_torch(layout):
    def fn(L, x):
        y, both = x.conj().imag, L._neg_view(x).conj()
        return [y.resolve_neg(), y.clone(), y.contiguous(), y.resolve_conj(),
                L.resolve_neg(both), both.resolve_conj(), both.clone(),
                L._neg_view(L.ones(2)).contiguous(), x.conj().resolve_neg()]
    _, _, es_, ts = _both("complex64", layout, fn)
    for ev, tv in zip(es_, ts):
        # a copy of a permuted non-dense view: ember's clone lays it out row-major
        _same(ev, tv, strides=ev.data_ptr() != tv.data_ptr() and layout == "contiguous")
    x = ember.tensor([1 + 2j])
    y = x.conj().imag
    assert y.resolve_neg().data_ptr() != y.data_ptr()
    assert y.resolve_conj() is y and x.resolve_neg() is x


def test_numpy_asarray_and_dlpack_refuse_the_bit():
    y = ember.tensor([1 + 2j, 3 - 4j]).conj().imag
    with pytest.raises(RuntimeError, match="negative bit set. Use tensor.resolve_neg"):
        y.numpy()
    with pytest.raises(RuntimeError, match="negative bit set"):
        np.asarray(y)
    with pytest.raises(RuntimeError, match="negative bit set"):
        torch.tensor([1 + 2j]).conj().imag.numpy()
    with pytest.raises(RuntimeError, match="conjugate bit set"):
        np.asarray(ember.tensor([1j]).conj())
    with pytest.raises(BufferError, match="conjugate bit"):
        ember.tensor([1j]).conj().__dlpack__()
    with pytest.raises(BufferError, match="negative bit"):
        y.__dlpack__()
    assert y.resolve_neg().numpy().tolist() == [-2.0, 4.0]


# -- writing through ------------------------------------------------------------------------------
WRITES = {
    "fill_": lambda L, x: x.conj().imag.fill_(2.5),
    "iadd": lambda L, x: x.conj().imag.__iadd__(1),
    "mul_tensor": lambda L, x: x.conj().imag.mul_(L.arange(x.shape[1], dtype=L.float32) + 1
                                                  if x.dtype == L.complex64 else 2.0),
    "copy_": lambda L, x: x.conj().imag.copy_(L.ones(x.shape) * 3),
    "copy_from_neg": lambda L, x: x.conj().imag.copy_(L._neg_view(x.real.clone())),
    "setitem": lambda L, x: x.conj().imag.__setitem__((0, slice(None)), 7.0),
    "slice_add_": lambda L, x: x.conj().imag[1:, ::2].add_(5),
    "neg_view_complex_mul_": lambda L, x: L._neg_view(x).mul_(2 - 1j),
    "neg_conj_copy_": lambda L, x: L._neg_view(x).conj().copy_(L.ones(x.shape) * (1 + 2j)),
    "neg_view_of_real": lambda L, x: L._neg_view(x.real).sub_(1),
    "self_operand": lambda L, x: (lambda y: y.add_(y))(x.conj().imag),
    "imag_setter": lambda L, x: setattr(x.conj(), "imag", L.ones(x.shape) * 4),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("name", CDTYPES)
def test_writes_through_the_bit_reach_the_base_like_torch(name, layout, write):
    e, t = _pair(name)
    ev0 = e._version
    WRITES[write](ember, LAYOUTS[layout](ember, e))
    WRITES[write](torch, LAYOUTS[layout](torch, t))
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e._version > ev0


# -- checkpoints ----------------------------------------------------------------------------------
def _bytes(save, obj) -> io.BytesIO:
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return buf


CHECKPOINTED = {
    "conj_imag": lambda L, x: x.conj().imag,
    "conj_imag_t": lambda L, x: x.conj().imag.t(),
    "neg_complex": lambda L, x: L._neg_view(x),
    "neg_conj": lambda L, x: L._neg_view(x).conj(),
    "neg_real": lambda L, x: L._neg_view(L.ones(3)),
}


@pytest.mark.parametrize("what", CHECKPOINTED)
def test_checkpoints_keep_the_bit_both_ways_like_torch(what):
    e, t = _pair("complex64")
    ev, tv = CHECKPOINTED[what](ember, e), CHECKPOINTED[what](torch, t)
    from_ember = torch.load(_bytes(ember.save, {"v": ev}), weights_only=True)["v"]
    from_torch = es.load(_bytes(torch.save, {"v": tv}))["v"]
    for loaded in (from_ember, from_torch):
        assert (loaded.is_neg(), loaded.is_conj()) == (tv.is_neg(), tv.is_conj())
    _same(from_torch, tv)
    np.testing.assert_array_equal(_np(from_ember), _np(tv))
    for loaded in (from_torch, from_ember):  # still a writable view
        if loaded.dtype.is_floating_point:
            loaded.fill_(1.0)
            assert _np(loaded).tolist() == np.ones(loaded.shape).tolist()


def test_safetensors_refuses_the_bit(tmp_path):
    y = ember.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="negative bit"):
        est.save_file({"y": ember._neg_view(y)}, str(tmp_path / "y.safetensors"))
    est.save_file({"y": ember._neg_view(y).resolve_neg()}, str(tmp_path / "y.safetensors"))
    assert est.load_file(str(tmp_path / "y.safetensors"))["y"].tolist() == [-1.0, -2.0]


# -- autograd -------------------------------------------------------------------------------------
def _grads(lib, fn, a: np.ndarray, g: np.ndarray, layout):
    x = lib.tensor(a, requires_grad=True)
    out = fn(lib, LAYOUTS[layout](lib, x))
    (out * lib.tensor(g)).sum().backward() if not out.dtype.is_complex else \
        (lib.view_as_real(out.resolve_conj().resolve_neg()) * lib.tensor(g)).sum().backward()
    return out, x.grad


GRAD_FNS = {
    "conj_imag": lambda L, x: x.conj().imag * 1.5,
    "neg_view": lambda L, x: L._neg_view(x.real) * x.imag,
    "neg_view_complex": lambda L, x: L._neg_view(x) * (2 - 1j),
    "neg_conj_imag": lambda L, x: L._neg_view(x.conj()).imag.t(),
    "conj_imag_slice": lambda L, x: x.conj().imag[1:, ::2] ** 2,
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", GRAD_FNS)
def test_gradients_through_the_bit_like_torch(fn, layout):
    a = _values("complex128")
    probe = GRAD_FNS[fn](torch, LAYOUTS[layout](torch, torch.from_numpy(a)))
    shape = tuple(probe.shape) + ((2,) if probe.dtype.is_complex else ())
    g = _RNG.standard_normal(shape)
    eo, eg = _grads(ember, GRAD_FNS[fn], a, g, layout)
    to, tg = _grads(torch, GRAD_FNS[fn], a, g, layout)
    _same(eo, to, strides=False)  # computed outputs: values and bits
    assert eg.is_conj() == tg.is_conj()
    np.testing.assert_allclose(_np(eg), _np(tg), rtol=1e-12, atol=1e-12)
    if fn == "neg_view":
        assert type(eo.grad_fn).__name__ == "MulBackward0"
        neg = ember._neg_view(ember.ones(2, requires_grad=True))
        assert type(neg.grad_fn).__name__ == "NegViewBackward0"


INPLACE_GRAD = {
    "mul_": lambda L, b, w: b.conj().imag.mul_(w),
    "copy_": lambda L, b, w: b.conj().imag.copy_(w * 2),
    "real_mul_": lambda L, b, w: b.real.mul_(w),
    "imag_add_": lambda L, b, w: b.imag.add_(w),
    "neg_view_mul_": lambda L, b, w: L._neg_view(b).mul_(w * 1j),
    "slice_mul_": lambda L, b, w: b.conj().imag[:, 1:].mul_(w[:, 1:]),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", INPLACE_GRAD)
def test_in_place_through_the_bit_with_autograd_like_torch(op, layout):
    a = _values("complex128")
    shape = tuple(LAYOUTS[layout](torch, torch.from_numpy(a)).shape)
    wv = _RNG.standard_normal(shape)
    g = _RNG.standard_normal((*a.shape, 2))
    got = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        w = lib.tensor(wv, requires_grad=True)
        base = x.clone()
        INPLACE_GRAD[op](lib, LAYOUTS[layout](lib, base), w)
        (lib.view_as_real(base) * lib.tensor(g)).sum().backward()
        got.append((_np(base), _np(x.grad), _np(w.grad)))
    for e, t in zip(*got):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)


def test_gradcheck_through_the_bit():
    x = ember.tensor(_values("complex128", (3, 2)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda x: x.conj().imag * x.real, (x,))
    assert ember.autograd.gradcheck(lambda x: ember._neg_view(x.conj()), (x,))
