"""Compiled graphs over complex tensors against eager ember (and torch where it is installed).

The NumPy and C backends render only real float nodes themselves; complex nodes run as ember
ops inside the same compiled function (NOTE [NumPy rendering is opt-in per node] in
ember/compiler/backends/numpy_backend.py), so a graph that mixes complex ops with real
pointwise chains keeps its fused C kernels for the real part. Inputs with the lazy
conjugation bit are traced with the bit (composites such as ``real``/``imag`` branch on it)
and guarded on it, so one compiled function serves plain tensors and conjugated views, each
with eager's result. Training regions with complex intermediates and a real loss give eager's
gradients (torch's conjugate-Wirtinger convention), including for incoming gradients that
carry the conjugation bit.

Tolerances: eager and compiled code run the same complex kernels; only real chains and
reductions rendered by NumPy or fused in C may round differently, by at most a few ulps per
term reduced, so values are compared to ``8 * eps * terms`` (``terms``: the number of values a
result element sums, at least 1) of the inputs' magnitude (O(1): standard normal parts).
"""

from __future__ import annotations

import math
import warnings

import pytest

import ember
import ember.fft
from ember.compiler import cc, explain, make_fx
from ember.compiler.backends import compile_graph
from ember.compiler.explain import collecting
from ember.compiler.guards import GuardBuilder
from ember.compiler.meta import to_meta
from ember.testing import assert_close
from tests.compiler.test_aot import _region_node

needs_gcc = pytest.mark.skipif(cc.compiler() is None, reason="no C compiler")
BACKENDS = ["numpy", pytest.param("c", marks=needs_gcc)]
CDTYPES = [ember.complex64, ember.complex128]
EPS = {ember.complex64: 2.0 ** -23, ember.complex128: 2.0 ** -52,
       ember.float32: 2.0 ** -23, ember.float64: 2.0 ** -52}


pytestmark = pytest.mark.usefixtures("isolated_kernel_cache")


def _gen(seed):
    return ember.Generator().manual_seed(seed)


def _cplx(shape, dtype=ember.complex64, seed=0, layout="contiguous", requires_grad=False):
    """A complex tensor with standard normal parts, in ``layout`` (``transposed``: the last
    two dims swapped in memory; ``strided``: every other element; ``conj``: a lazily
    conjugated view)."""
    g = _gen(seed)
    real = dtype.to_real()
    build = tuple(reversed(shape)) if layout == "transposed" else \
        tuple(2 * s for s in shape) if layout == "strided" else tuple(shape)
    t = ember.complex(ember.randn(build, generator=g, dtype=real),
                      ember.randn(build, generator=g, dtype=real))
    if layout == "transposed":
        t = t.permute(*reversed(range(len(shape))))
    elif layout == "strided":
        t = t[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "conj":
        t = t.conj()
    if requires_grad:
        t = t.detach().requires_grad_(True) if layout != "conj" else t.requires_grad_(True)
    return t


def _real(shape, dtype=ember.float32, seed=1, requires_grad=False):
    return ember.randn(shape, generator=_gen(seed), dtype=dtype).requires_grad_(requires_grad)


def _tol(dtype, terms=1):
    e = EPS.get(dtype, 0.0) * 8 * max(terms, 1)     # integer and bool results: exact
    return {"rtol": e, "atol": e}


def _same(got, want, terms=1):
    """Compiled result ``got`` equals eager's ``want``: type, shape, dtype, conjugation bit and
    values."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, terms)
        return
    assert isinstance(got, ember.Tensor)
    assert got.shape == want.shape and got.dtype is want.dtype
    assert got.is_conj() == want.is_conj()
    assert _is_neg(got) == _is_neg(want)
    assert_close(got, want, **_tol(want.dtype, terms), equal_nan=True, check_stride=False)


def _is_neg(t):
    return getattr(t, "_is_neg", False)


def _one_graph(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # eager's own warnings, seen by the caller's check
        out = explain(fn)(*args)
    assert (out.graph_count, out.graph_break_count) == (1, 0), out.break_reasons


# -- forward: values of compiled complex graphs ---------------------------------------------------
# name -> (fn, inputs(dtype), terms reduced per output element)
def _zz(d):
    return (_cplx((3, 4), d, 0), _cplx((3, 4), d, 1))


FORWARD = {
    "add": (lambda a, b: a + b, _zz, 1),
    "sub_alpha": (lambda a, b: ember.sub(a, b, alpha=2), _zz, 1),
    "mul": (lambda a, b: a * b, _zz, 1),
    "div": (lambda a, b: a / b, _zz, 1),
    "exp": (lambda a: ember.exp(a), lambda d: (_cplx((3, 4), d),), 1),
    "log": (lambda a: ember.log(a), lambda d: (_cplx((3, 4), d),), 1),
    "abs": (lambda a: a.abs(), lambda d: (_cplx((3, 4), d),), 1),
    "abs_chain": (lambda a: (a.abs() * 2 + 1).sqrt(), lambda d: (_cplx((3, 4), d),), 1),
    "angle": (lambda a: ember.angle(a) * 0.5, lambda d: (_cplx((3, 4), d),), 1),
    "conj": (lambda a: a.conj(), lambda d: (_cplx((3, 4), d),), 1),
    "conj_mul": (lambda a: a * a.conj(), lambda d: (_cplx((3, 4), d),), 1),
    "conj_physical": (lambda a: ember.conj_physical(a) + 1, lambda d: (_cplx((3, 4), d),), 1),
    "real_imag": (lambda a: a.real * 2 - a.imag, lambda d: (_cplx((3, 4), d),), 1),
    "view_as_real": (lambda a: ember.view_as_real(a) * 2, lambda d: (_cplx((3, 4), d),), 1),
    "view_as_real_sum": (lambda a: ember.view_as_real(a * 2).sum(-1),
                         lambda d: (_cplx((3, 4), d),), 2),
    "view_as_complex": (lambda x: ember.view_as_complex(x * 2) * (1 - 2j),
                        lambda d: (_real((3, 4, 2), d.to_real()),), 1),
    "polar": (lambda r, t: ember.polar(r.abs(), t) * 2,
              lambda d: (_real((3, 4), d.to_real(), 1), _real((3, 4), d.to_real(), 2)), 1),
    "complex": (lambda x, y: ember.complex(x, y * 2) + 1,
                lambda d: (_real((3, 4), d.to_real(), 1), _real((3, 4), d.to_real(), 2)), 1),
    "sum": (lambda a: a.sum(), lambda d: (_cplx((3, 4), d),), 12),
    "sum_dim": (lambda a: a.sum(1), lambda d: (_cplx((3, 4), d),), 4),
    "mean": (lambda a: a.mean(0, keepdim=True), lambda d: (_cplx((3, 4), d),), 3),
    "prod": (lambda a: a.prod(1), lambda d: (_cplx((3, 4), d),), 4),
    "abs_sum": (lambda a: a.abs().sum(), lambda d: (_cplx((3, 4), d),), 12),
    "abs_sum_dim0": (lambda a: a.abs().sum(0), lambda d: (_cplx((5, 4), d),), 5),
    "abs_softmax": (lambda a: ember.softmax(a.abs(), -1), lambda d: (_cplx((3, 4), d),), 4),
    "matmul": (lambda a, b: a @ b, lambda d: (_cplx((3, 4), d), _cplx((4, 5), d, 1)), 4),
    "matmul_abs": (lambda a, b: (a @ b).abs().sum(-1),
                   lambda d: (_cplx((3, 4), d), _cplx((4, 5), d, 1)), 20),
    "bmm": (lambda a, b: ember.bmm(a, b), lambda d: (_cplx((2, 3, 4), d), _cplx((2, 4, 2), d, 1)),
            4),
    "fft": (lambda a: ember.fft.fft(a), lambda d: (_cplx((3, 8), d),), 8),
    "fft_norm": (lambda a: ember.fft.fft(a, n=6, dim=0, norm="ortho"),
                 lambda d: (_cplx((4, 5), d),), 6),
    "rfft": (lambda x: ember.fft.rfft(x), lambda d: (_real((3, 8), d.to_real()),), 8),
    "irfft": (lambda x: ember.fft.irfft(ember.fft.rfft(x) * 2), lambda d: (_real((8,), d.to_real()),),
              16),
    "fft2": (lambda a: ember.fft.fft2(a), lambda d: (_cplx((4, 6), d),), 24),
    "rfft_filter": (lambda x, w: ember.fft.irfft(ember.fft.rfft(x) * w, n=8).relu() * 2,
                    lambda d: (_real((3, 8), d.to_real()), _cplx((5,), d, 3)), 16),
    "mixed_add": (lambda a, x: a + x, lambda d: (_cplx((3, 4), d), _real((3, 4), d.to_real())),
                  1),
    "mixed_mul_f64": (lambda a, x: a * x, lambda d: (_cplx((3, 4), d), _real((3, 4), ember.float64)),
                      1),
    "mixed_scalar": (lambda x: x * (1 + 2j) + 1j, lambda d: (_real((3, 4), d.to_real()),), 1),
    "mixed_int": (lambda a, i: a + i, lambda d: (_cplx((3, 4), d),
                                                 ember.arange(12).reshape(3, 4)), 1),
    "mixed_where": (lambda a, x: ember.where(x > 0, a, x.to(a.dtype)),
                    lambda d: (_cplx((3, 4), d), _real((3, 4), d.to_real())), 1),
    "to_complex": (lambda x: x.to(ember.complex128) * 1j, lambda d: (_real((3, 4), d.to_real()),),
                   1),
    "cast_real": (lambda a: (a * 2).to(ember.float64).exp(), lambda d: (_cplx((3, 4), d),), 1),
    "eq": (lambda a, b: (a == b) | (a != a * 2), _zz, 1),
    "transpose_reshape": (lambda a: (a.t() * 2).reshape(-1)[:5], lambda d: (_cplx((3, 4), d),),
                          1),
    "multi_out": (lambda a: (a.abs(), a * 2, a.real.sum()), lambda d: (_cplx((3, 4), d),), 12),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("name", list(FORWARD))
def test_forward_equals_eager(name, dtype, backend):
    fn, make, terms = FORWARD[name]
    args = make(dtype)
    with warnings.catch_warnings(record=True) as want_warned:
        warnings.simplefilter("always")
        want = fn(*args)
    with warnings.catch_warnings(record=True) as got_warned:
        warnings.simplefilter("always")
        got = ember.compile(fn, backend=backend)(*args)
    _same(got, want, terms)
    # eager's warnings (a complex to real cast), once per call, and no others
    assert [str(w.message) for w in got_warned] == [str(w.message) for w in want_warned]
    _one_graph(fn, *args)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", ["transposed", "strided", "conj"])
def test_forward_non_contiguous_and_conjugated_inputs(layout, backend):
    for name in ("mul", "abs_chain", "real_imag", "view_as_real_sum", "matmul_abs", "fft",
                 "abs_sum_dim0"):
        fn, make, terms = FORWARD[name]
        args = tuple(_cplx(tuple(a.shape), a.dtype, seed=i, layout=layout)
                     for i, a in enumerate(make(ember.complex64)))
        _same(ember.compile(fn, backend=backend)(*args), fn(*args), terms)


@needs_gcc
def test_c_backend_keeps_kernels_beside_complex_nodes():
    """Complex nodes run as ember ops inside the C-compiled graph; the real chain after
    ``abs`` is one fused kernel (no fallback of the whole graph)."""
    def f(a, b):
        m = (a * b.conj()).abs()
        return ((m * 2 + 1).relu() - m.sqrt()).sum(-1)

    a, b = _cplx((4, 8)), _cplx((4, 8), seed=1)
    compiled = compile_graph(make_fx(f)(a, b).graph, [a, b], "c")
    assert compiled.kernels >= 1
    assert {"mul", "abs"} <= {name.split(".")[0] for name in compiled.fallbacks}
    _same(compiled(a, b), f(a, b), 8)
    # the conjugated view passed in is resolved by the ember op reading it
    _same(compiled(a, b.conj().resolve_conj().conj()), f(a, b), 8)


# -- the conjugation bit of inputs ------------------------------------------------------------------
CONJ_SENSITIVE = {
    "real_imag": lambda a: a.real + 2 * a.imag,
    "imag_only": lambda a: a.imag.exp(),
    "view_as_real": lambda a: ember.view_as_real(a.resolve_conj()) * 2,
    "is_conj_branch": lambda a: a * 2 if a.is_conj() else a * 3,
    "conj_out": lambda a: a.conj(),
    "mul": lambda a: a * (2 - 1j),
    "fft": lambda a: ember.fft.fft(a).real,
    "abs_sum": lambda a: (a * a).abs().sum(-1),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("first", ["plain", "conj"])
@pytest.mark.parametrize("name", list(CONJ_SENSITIVE))
def test_conjugated_input_after_plain_one_and_back(name, first, backend):
    fn = CONJ_SENSITIVE[name]
    z = _cplx((3, 4), ember.complex64)
    cf = ember.compile(fn, backend=backend)
    order = [z, z.conj(), z, z.conj()] if first == "plain" else [z.conj(), z, z.conj(), z]
    for x in order:
        _same(cf(x), fn(x), 4)


def test_conjugated_input_recompiles_with_the_reason():
    z = _cplx((3,), ember.complex128)
    fn = CONJ_SENSITIVE["real_imag"]
    cf = ember.compile(fn, backend="numpy")
    with collecting() as ev:
        for x in (z, z.conj(), z, z.conj()):
            _same(cf(x), fn(x))
    assert len(ev.recompiles) == 1          # then both entries serve their calls
    assert "conjugation bit mismatch: expected is_conj()=False, actual True" in \
        ev.recompiles[0][1]
    assert any("is_conj=True" in g for gs in explain(fn)(z.conj()).guards for g in gs)
    gb = GuardBuilder()
    gb.add_tensor_match("L[0]", z)
    gs = gb.build()
    assert gs([z], {}) == 0 and gs([z.conj()], {}) == 1
    # real tensors are not asked for the bit
    gb = GuardBuilder()
    gb.add_tensor_match("L[0]", ember.ones(3))
    assert "_is_conj" not in gb.build().source


def test_conjugated_input_with_dynamic_shapes():
    fn = CONJ_SENSITIVE["real_imag"]
    cf = ember.compile(fn, backend="numpy", dynamic=True)
    with collecting() as ev:
        for n in (3, 5, 7):
            x = _cplx((n,), ember.complex64, seed=n).conj()
            _same(cf(x), fn(x))
    assert not ev.recompiles        # the size is a symbol, the conjugation bit is kept


needs_neg_bit = pytest.mark.skipif(not hasattr(ember.Tensor, "is_neg"),
                                   reason="this ember has no negative bit")


@pytest.mark.parametrize("backend", BACKENDS)
def test_negated_imaginary_view_of_conjugated_tensor(backend):
    """``z.conj().imag`` reads the negated stored parts (with ember's negative bit, a view
    of them): as an intermediate read by rendered real code, as an output, and as an input
    of fused kernels compiled for a plain tensor of the same strides."""
    z = _cplx((4, 6), ember.complex64)

    def inner(a):
        return (a.conj().imag * 2 + 1).relu().sum(-1)

    def outer(a):
        return a.conj().imag

    for fn in (inner, outer):
        cf = ember.compile(fn, backend=backend)
        for x in (z, z.conj(), z):
            _same(cf(x), fn(x), 6)

    def kernel(x):
        return (x * 2 + 1).exp().sum(-1)

    plain = ember.view_as_real(z)[..., 1]          # the same strides as z.conj().imag
    cf = ember.compile(kernel, backend=backend)
    for x in (plain, z.conj().imag, plain, z.conj().imag):
        _same(cf(x), kernel(x), 6)
    compiled = compile_graph(make_fx(kernel)(plain).graph, [plain], backend)
    _same(compiled(z.conj().imag), kernel(z.conj().imag), 6)


@needs_neg_bit
def test_negative_bit_is_guarded_and_kept_on_meta_values():
    x = ember.view_as_real(_cplx((3,), ember.complex64))[..., 1]
    y = _cplx((3,), ember.complex64).conj().imag
    assert y.is_neg() and y.stride() == x.stride()
    gb = GuardBuilder()
    gb.add_tensor_match("L[0]", x)
    gs = gb.build()
    assert gs([x], {}) == 0 and gs([y], {}) == 1
    assert "negative bit mismatch: expected is_neg()=False, actual True" in gs.reason([y], {})
    assert to_meta(y).is_neg()
    fn = lambda t: t.resolve_neg() * 2 if t.is_neg() else t * 3  # noqa: E731
    cf = ember.compile(fn, backend="numpy")
    for t in (x, y, x, y):
        _same(cf(t), fn(t))


def test_to_meta_keeps_conj_bit_and_complex_requires_grad():
    z = _cplx((2, 3), ember.complex64, requires_grad=True)
    m = to_meta(z.conj())
    assert m.is_conj() and m.requires_grad and m.dtype is ember.complex64
    m = to_meta(z)
    assert not m.is_conj() and m.requires_grad


def test_make_fx_of_conjugated_input():
    z = _cplx((3, 4), ember.complex64).conj()
    fn = CONJ_SENSITIVE["real_imag"]
    gm = make_fx(fn)(z)
    _same(gm(z), fn(z))
    _same(compile_graph(gm.graph, [z], "numpy")(z), fn(z))


_Z = _cplx((4,), ember.complex64, 9)    # a global the compiled code reads (a constant)


def _across_a_break(a):
    b = a.conj() * 2
    print("", end="")                   # a graph break: ``b`` crosses it
    return b.real + b.imag + (b * _Z).abs()


@pytest.mark.parametrize("backend", BACKENDS)
def test_breaks_scalars_constants_and_fullgraph(backend):
    a = _cplx((4,), ember.complex64, 1)
    cf = ember.compile(_across_a_break, backend=backend)
    for x in (a, a.conj(), a):
        _same(cf(x), _across_a_break(x))
    assert explain(_across_a_break)(a).graph_break_count == 1

    def scaled(x, s):
        return x * s + s

    cf = ember.compile(scaled, backend=backend)
    for s in (1 + 2j, 3.0, 2j, 1 + 2j):     # a Python complex is guarded as a constant
        _same(cf(a, s), scaled(a, s))
    cf = ember.compile(lambda x: (ember.fft.ifft(x) * 2).abs(), backend=backend, fullgraph=True)
    _same(cf(a), (ember.fft.ifft(a) * 2).abs(), 4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_with_complex_parameter(backend):
    class Filter(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = ember.nn.Parameter(_cplx((5,), ember.complex128, 3))

        def forward(self, x):
            return (ember.fft.irfft(ember.fft.rfft(x) * self.w, n=8) ** 2).sum()

    eager, comp = Filter(), Filter()
    cm = ember.compile(comp, backend=backend)
    x = _real((3, 8), ember.float64)
    want, got = eager(x), cm(x)
    assert _region_node(got) is not None
    want.backward()
    got.backward()
    _same(got, want, 64)
    _same(comp.w.grad, eager.w.grad, 64)


# -- training through compiled regions ----------------------------------------------------------
def _rr(shape, seed):
    return _real(shape, ember.float64, seed, requires_grad=True)


def _cc(shape, seed):
    return _cplx(shape, ember.complex128, seed, requires_grad=True)


# name -> (fn of leaves with a real scalar result, leaves, terms)
TRAINING = {
    "rfft_times_w_abs": (lambda x, w: (ember.fft.rfft(x) * w).abs().sum(),
                         lambda: (_rr((3, 8), 0), _cc((5,), 1)), 40),
    "z_times_conj_real": (lambda z: (z * z.conj()).real.sum(), lambda: (_cc((3, 4), 0),), 12),
    "complex_matmul_abs": (lambda a, b: (a @ b).abs().sum(), lambda: (_cc((3, 4), 0),
                                                                      _cc((4, 2), 1)), 24),
    "complex_of_reals_matmul": (lambda x, y, w: (ember.complex(x, y) @ w).abs().mean(),
                                lambda: (_rr((3, 4), 0), _rr((3, 4), 1), _cc((4, 2), 2)), 24),
    "fft2_power": (lambda x: ember.fft.fft2(x).abs().pow(2).sum(), lambda: (_rr((4, 6), 0),),
                   576),
    "irfft_filter": (lambda x, w: (ember.fft.irfft(ember.fft.rfft(x) * w) ** 2).sum(),
                     lambda: (_rr((8,), 0), _cc((5,), 1)), 64),
    "angle_imag": (lambda z: ember.angle(z * 2).sum() + z.imag.sum(), lambda: (_cc((5,), 0),),
                   5),
    "polar": (lambda r, t: ember.view_as_real(ember.polar(r.exp(), t)).sum(),
              lambda: (_rr((5,), 0), _rr((5,), 1)), 10),
    "exp_log": (lambda z: ember.exp(z).real.sum() + ember.log(z).imag.sum(),
                lambda: (_cc((5,), 0),), 5),
    "div_abs": (lambda z, w: (z / w).abs().sum(), lambda: (_cc((5,), 0), _cc((5,), 1)), 5),
    "view_as_complex_chain": (lambda x: (ember.view_as_complex(x * 2) * (1 + 1j)).abs().sum(),
                              lambda: (_rr((3, 2), 0),), 3),
    # the backward reads pinv's saved result next to its conjugate (same memory and
    # geometry, another conjugation bit): two different graph values
    "pinv_matmul": (lambda a, b: (ember.linalg.pinv(a) @ b).abs().sum(),
                    lambda: (_cc((5, 3), 0), _cc((5, 2), 1)), 30),
    "real_chain_after_abs": (lambda z: ((z * 2).abs().relu() * 3 + 1).log().sum(),
                             lambda: (_cc((4, 6), 0),), 24),
}


def _grads(loss, leaves):
    return ember.autograd.grad(loss, leaves, allow_unused=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(TRAINING))
def test_training_gradients_equal_eager(name, backend):
    fn, make, terms = TRAINING[name]
    leaves = make()
    want = fn(*leaves)
    wgrads = _grads(want, leaves)
    got = ember.compile(fn, backend=backend)(*leaves)
    assert _region_node(got) is not None      # the training region ran, not the eager backend
    _same(got, want, terms)
    for g, w in zip(_grads(got, leaves), wgrads):
        assert g.dtype is w.dtype and g.shape == w.shape
        assert_close(g, w, **_tol(w.dtype, terms))


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_conjugated_leaf_input(backend):
    def fn(z):
        return (z * z).real.sum() + z.imag.exp().sum()

    z = _cc((3, 4), 0)
    want_grad = _grads(fn(z.conj()), [z])[0]
    cf = ember.compile(fn, backend=backend)
    for x in (z, z.conj(), z.conj()):
        got = cf(x)
        assert _region_node(got) is not None
        _same(got, fn(x), 12)
    _same(_grads(cf(z.conj()), [z])[0], want_grad, 12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_incoming_gradient_with_conj_bit(backend):
    """A region output used through ``.conj()`` downstream: its gradient arrives with the
    conjugation bit and meets the traced ``view_as_real`` of ``view_as_complex``'s backward."""
    def fn(x):
        return ember.view_as_complex(x * 2)

    x = _rr((3, 2), 0)
    c = _cplx((3,), ember.complex128, 5)
    want = _grads((fn(x).conj() * c).imag.sum(), [x])[0]
    out = ember.compile(fn, backend=backend)(x)
    assert _region_node(out) is not None
    _same(_grads((out.conj() * c).imag.sum(), [x])[0], want)


def test_training_create_graph_gives_first_order_gradients():
    fn, make, terms = TRAINING["z_times_conj_real"]
    (z,) = make()
    (want,) = ember.autograd.grad(fn(z), [z])
    (got,) = ember.autograd.grad(ember.compile(fn, backend="numpy")(z), [z], create_graph=True)
    assert_close(got.detach(), want, **_tol(ember.complex128, terms))
    assert got.requires_grad


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_loop_with_complex_parameter(backend):
    """A learnable complex frequency response: compiled SGD steps follow eager's losses."""
    def run(compiled):
        w = _cplx((5,), ember.complex128, 7, requires_grad=True)
        opt = ember.optim.SGD([w], lr=0.05)

        def step(x, y):
            return ((ember.fft.irfft(ember.fft.rfft(x) * w, n=8) - y) ** 2).mean()

        if compiled:
            step = ember.compile(step, backend=backend)
        losses = []
        for i in range(5):
            x, y = _real((4, 8), ember.float64, 10 + i), _real((4, 8), ember.float64, 20 + i)
            loss = step(x, y)
            assert not compiled or _region_node(loss) is not None
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        return losses, w.detach()

    (want, w_want), (got, w_got) = run(False), run(True)
    for g, w in zip(got, want):
        assert math.isclose(g, w, rel_tol=EPS[ember.float64] * 8 * 64)
    assert_close(w_got, w_want, **_tol(ember.complex128, 64))


def test_data_dependent_backward_falls_back_to_eager():
    """Complex prod's backward reads the data (zeros); the region runs on the eager backend
    and still gives eager's gradients."""
    (z,) = (_cc((3, 4), 0),)

    def fn(z):
        return z.prod(1).abs().sum()

    want = _grads(fn(z), [z])[0]
    got = ember.compile(fn, backend="numpy")(z)
    assert _region_node(got) is None
    _same(_grads(got, [z])[0], want, 4)


# -- torch as the oracle for a few regions --------------------------------------------------------
def _to_torch(torch, t):
    return torch.from_numpy(t.detach().resolve_conj().numpy().copy()).requires_grad_(
        t.requires_grad)


@pytest.mark.parametrize("name", ["rfft_times_w_abs", "z_times_conj_real",
                                  "complex_matmul_abs", "irfft_filter", "angle_imag"])
def test_training_gradients_equal_torch(name):
    torch = pytest.importorskip("torch")
    fn, make, terms = TRAINING[name]
    leaves = make()
    got = ember.compile(fn, backend="numpy")(*leaves)
    assert _region_node(got) is not None
    grads = _grads(got, leaves)
    tleaves = [_to_torch(torch, t) for t in leaves]
    want = _torch_fn(torch, name)(*tleaves)
    twant = torch.autograd.grad(want, tleaves)
    assert math.isclose(got.item(), want.item(), rel_tol=EPS[ember.float64] * 8 * terms)
    for g, w in zip(grads, twant):
        assert_close(g, ember.tensor(w.numpy()), **_tol(ember.complex128 if w.is_complex()
                                                         else ember.float64, terms))


def _torch_fn(torch, name):
    return {
        "rfft_times_w_abs": lambda x, w: (torch.fft.rfft(x) * w).abs().sum(),
        "z_times_conj_real": lambda z: (z * z.conj()).real.sum(),
        "complex_matmul_abs": lambda a, b: (a @ b).abs().sum(),
        "irfft_filter": lambda x, w: (torch.fft.irfft(torch.fft.rfft(x) * w) ** 2).sum(),
        "angle_imag": lambda z: torch.angle(z * 2).sum() + z.imag.sum(),
    }[name]
