"""ember.ops.numeric composites against torch: values, dtypes, shapes, gradients with a random
cotangent, float32/float64, non-contiguous (transposed, strided) inputs, edge cases, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import ember

FLOATS = ["float32", "float64"]
TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-10)}


def _arr(shape, dtype, seed, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    if dtype in ("int32", "int64", "int8"):
        return rng.integers(-20, 20, size=shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.uniform(low, high, size=shape).astype(dtype)


def pair(shape, dtype="float32", layout="contiguous", seed=0, grad=False, **kw):
    """The same data as an (ember, torch) pair of leaves; ``layout`` picks a non-contiguous
    view made identically in both libraries (``transposed``: the last two dims swapped,
    ``strided``: every other element of the last dim)."""
    shape = tuple(shape)
    if layout == "transposed":
        base = shape[:-2] + (shape[-1], shape[-2])
        view = lambda t: t.transpose(-1, -2)  # noqa: E731
    elif layout == "strided":
        base = shape[:-1] + (2 * shape[-1],)
        view = lambda t: t[..., ::2]  # noqa: E731
    else:
        base, view = shape, (lambda t: t)
    a = _arr(base, dtype, seed, **kw)
    e, t = ember.tensor(a.copy()), torch.tensor(a.copy())
    if grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    ev, tv = view(e), view(t)
    if layout != "contiguous":
        assert not ev.is_contiguous()
    return (e, ev), (t, tv)


def assert_same(e_out, t_out, dtype="float64", equal_nan=True):
    assert tuple(e_out.shape) == tuple(t_out.shape)
    assert str(e_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1]
    tol = TOL.get(dtype, dict(rtol=0, atol=0))
    np.testing.assert_allclose(e_out.detach().numpy().astype(np.float64) if
                               e_out.dtype is not ember.bool else e_out.detach().numpy(),
                               t_out.detach().numpy().astype(np.float64) if
                               t_out.dtype is not torch.bool else t_out.detach().numpy(),
                               equal_nan=equal_nan, **tol)


def check(fn, specs, dtype="float32", grad=True, seed=0):
    """Run ``fn(lib, *views)`` in both libraries; compare outputs and input gradients."""
    es, ts = [], []
    for i, (shape, layout) in enumerate(specs):
        (e, ev), (t, tv) = pair(shape, dtype, layout, seed=seed + i, grad=grad)
        es.append((e, ev))
        ts.append((t, tv))
    eo = fn(ember, *[v for _, v in es])
    to = fn(torch, *[v for _, v in ts])
    assert_same(eo, to, dtype)
    if not grad:
        return eo
    g = _arr(tuple(to.shape), dtype, 99)
    (to * torch.tensor(g)).sum().backward()
    (eo * ember.tensor(g)).sum().backward()
    for (e, _), (t, _) in zip(es, ts, strict=True):
        assert_same(e.grad, t.grad, dtype)
    return eo


LAYOUTS = ["contiguous", "transposed", "strided"]


# -- diff ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n,dim", [(1, -1), (2, 0), (3, 1), (0, -1), (7, -1)])
def test_diff(dtype, layout, n, dim):
    check(lambda lib, x: lib.diff(x, n=n, dim=dim), [((4, 5), layout)], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_diff_prepend_append(dtype):
    check(lambda lib, x, p, a: lib.diff(x, 2, 0, prepend=p, append=a),
          [((3, 4), "transposed"), ((2, 4), "contiguous"), ((1, 4), "strided")], dtype)
    check(lambda lib, x, a: x.diff(dim=1, append=a), [((3, 4), "contiguous"), ((3, 2), "strided")],
          dtype)


def test_diff_dtypes_and_errors():
    for a in ([1, 5, 2, 9], [True, False, False, True]):
        assert_same(ember.diff(ember.tensor(a)), torch.diff(torch.tensor(a)), "int")
    e = ember.diff(ember.ones(2, 3), prepend=ember.zeros(2, 1, dtype=ember.int64))
    assert_same(e, torch.diff(torch.ones(2, 3), prepend=torch.zeros(2, 1, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        ember.diff(ember.tensor(3.0))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        ember.diff(ember.ones(3), n=-1)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        ember.diff(ember.ones(2, 3), prepend=ember.ones(3))
    with pytest.raises(RuntimeError, match=r"input.size\(0\) = 2, but got tensor.size\(0\) = 3"):
        ember.diff(ember.ones(2, 3), prepend=ember.ones(3, 1))
    with pytest.raises(IndexError):
        ember.diff(ember.ones(2, 3), dim=2)


# -- trapezoid family ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_dx(dtype, layout, name):
    check(lambda lib, y: getattr(lib, name)(y), [((3, 5), layout)], dtype)
    check(lambda lib, y: getattr(lib, name)(y, dx=0.5, dim=0), [((3, 5), layout)], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_x(dtype, name):
    check(lambda lib, y, x: getattr(lib, name)(y, x), [((3, 5), "transposed"), ((5,), "strided")],
          dtype)
    check(lambda lib, y, x: getattr(lib, name)(y, x, dim=0), [((3, 5), "strided"),
                                                            ((3, 5), "transposed")], dtype)
    check(lambda lib, y, x: getattr(lib, name)(y, x, dim=1), [((2, 3, 4), "contiguous"),
                                                            ((3, 4), "contiguous")], dtype)


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_edges_and_dtypes(name):
    def both(*args, **kw):
        targs = [torch.tensor(a) if isinstance(a, list | np.ndarray) else a for a in args]
        eargs = [ember.tensor(a) if isinstance(a, list | np.ndarray) else a for a in args]
        assert_same(getattr(ember, name)(*eargs, **kw), getattr(torch, name)(*targs, **kw))

    both([1, 2, 3])
    both([1, 2, 3], dx=2)
    both([1, 2, 3], [1, 2, 4])
    both(np.zeros((2, 0), np.float32))
    both(np.zeros((2, 1), np.float32))
    both(np.ones((2, 3), np.float32), np.ones((2, 2), np.float32))
    both([1, 2, 3], np.array([1.0, 2, 4]))
    with pytest.raises(RuntimeError, match="bool is not supported"):
        getattr(ember, name)(ember.tensor([True, False]))
    with pytest.raises(RuntimeError, match="bool is not supported"):
        getattr(ember, name)(ember.ones(2), ember.tensor([True, False]))
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        getattr(ember, name)(ember.ones(2, 3), ember.ones(2))
    with pytest.raises(RuntimeError, match="only support dx as a real number"):
        getattr(ember, name)(ember.ones(3), dx=True)
    with pytest.raises(IndexError):
        getattr(ember, name)(ember.tensor(3.0))
    with pytest.raises(TypeError):
        getattr(ember, name)(ember.ones(3), ember.ones(3), dx=1)


# -- cov, corrcoef -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("correction", [1, 0, 2])
def test_cov(dtype, layout, correction):
    check(lambda lib, x: lib.cov(x, correction=correction), [((3, 6), layout)], dtype)
    check(lambda lib, x: x.cov(correction=correction), [((6,), "strided")], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("weights", ["f", "a", "fa"])
def test_cov_weights(dtype, weights):
    fw = np.array([1, 3, 0, 2, 1, 4])
    aw = np.random.default_rng(3).uniform(0.1, 2.0, 6).astype(dtype)

    def fn(lib, x):
        kw = {}
        if "f" in weights:
            kw["fweights"] = lib.tensor(fw)
        if "a" in weights:
            kw["aweights"] = lib.tensor(aw)
        return lib.cov(x, correction=1, **kw)

    check(fn, [((3, 6), "transposed")], dtype)


def test_cov_edges_and_errors():
    assert_same(ember.cov(ember.tensor([1, 2, 4])), torch.cov(torch.tensor([1, 2, 4])))
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        e = ember.cov(ember.tensor([1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(e, torch.cov(torch.tensor([1.0])))
        assert_same(ember.cov(ember.zeros(2, 0)), torch.cov(torch.zeros(2, 0)))
    x = ember.ones(2, 3)
    cases = [
        (lambda: ember.cov(ember.zeros(2, 2, 2)), "two or fewer dimensions"),
        (lambda: ember.cov(ember.tensor([True])), "bool dtype is not supported"),
        (lambda: ember.cov(x, fweights=ember.tensor([1.0, 2, 3])), "integral dtype.*Float"),
        (lambda: ember.cov(x, fweights=ember.tensor([1, -2, 3])), "fweights cannot be negative"),
        (lambda: ember.cov(x, aweights=ember.tensor([1, 2, 3])), "floating point dtype.*Long"),
        (lambda: ember.cov(x, aweights=ember.zeros(3)), "weights sum to zero"),
        (lambda: ember.cov(x, fweights=ember.tensor([1, 2])), "2 != 3"),
        (lambda: ember.cov(x, fweights=ember.ones(1, 3, dtype=ember.int64)), "one or fewer"),
        (lambda: ember.corrcoef(ember.zeros(2, 2, 2)), "two or fewer dimensions"),
    ]
    for call, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            call()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_corrcoef(dtype, layout):
    check(lambda lib, x: lib.corrcoef(x), [((4, 7), layout)], dtype)
    check(lambda lib, x: x.corrcoef(), [((2, 5), layout)], dtype)
    assert_same(ember.corrcoef(ember.tensor([1, 2, 4])), torch.corrcoef(torch.tensor([1, 2, 4])))


# -- cdist, renorm -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, math.inf])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_cdist(dtype, p, layout):
    grad = True  # p == 0 too: torch's result requires grad, with zero gradients
    check(lambda lib, a, b: lib.cdist(a, b, p=p), [((4, 3), layout), ((5, 3), "strided")],
          dtype, grad=grad)
    check(lambda lib, a, b: lib.cdist(a, b, p=p), [((2, 1, 3, 4), layout), ((3, 2, 4), layout)],
          dtype, grad=grad)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_compute_modes(dtype, mode):
    check(lambda lib, a, b: lib.cdist(a, b, compute_mode=mode),
          [((30, 3), "contiguous"), ((4, 3), "transposed")], dtype)
    check(lambda lib, a, b: lib.cdist(a, b, compute_mode=mode),
          [((3, 4), "contiguous"), ((5, 4), "strided")], dtype)


@pytest.mark.parametrize("p", [0.0, 2.0])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_positional_p_and_mode(p, mode):
    check(lambda lib, a, b: lib.cdist(a, b, p, mode),
          [((3, 2), "transposed"), ((4, 2), "strided")], "float64", grad=True)


@pytest.mark.parametrize("p", [1.0, 2.0, 0.5, math.inf])
def test_cdist_zero_distance_has_zero_grad(p):
    e = ember.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
    t = torch.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
    eo, to = ember.cdist(e, e.detach(), p=p), torch.cdist(t, t.detach(), p=p)
    assert_same(eo, to, "float32")
    eo.sum().backward()
    to.sum().backward()
    assert_same(e.grad, t.grad, "float32")


def test_cdist_edges_and_errors():
    for a, b in [((0, 3), (2, 3)), ((2, 0), (3, 0))]:
        assert_same(ember.cdist(ember.ones(*a), ember.zeros(*b)),
                    torch.cdist(torch.ones(*a), torch.zeros(*b)), "float32")
    cases = [
        (lambda: ember.cdist(ember.zeros(3), ember.zeros(2, 3)), RuntimeError, "X1 got: 1D"),
        (lambda: ember.cdist(ember.zeros(2, 3), ember.zeros(2, 4)), RuntimeError,
         "same number of columns. X1: 3 X2: 4"),
        (lambda: ember.cdist(ember.zeros(2, 3, dtype=ember.int64),
                             ember.zeros(2, 3, dtype=ember.int64)), RuntimeError, "X1 got: Long"),
        (lambda: ember.cdist(ember.zeros(2, 3), ember.zeros(2, 3, dtype=ember.float64)),
         RuntimeError, "expected scalar type Float but found Double"),
        (lambda: ember.cdist(ember.zeros(2, 3), ember.zeros(2, 3), p=-1), RuntimeError,
         "non-negative p"),
        (lambda: ember.cdist(ember.zeros(2, 3), ember.zeros(2, 3), compute_mode="x"), ValueError,
         "x is not a valid value"),
        (lambda: ember.cdist(ember.zeros(2, 2, 3), ember.zeros(3, 2, 3)), RuntimeError, ""),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg or None):
            call()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 2.0), (3.5, -1, 0.5),
                                           (math.inf, 1, 1.0), (2, 0, 100.0)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_renorm(dtype, p, dim, maxnorm, layout):
    check(lambda lib, x: lib.renorm(x, p, dim, maxnorm), [((3, 4), layout)], dtype)
    check(lambda lib, x: x.renorm(p, dim, maxnorm), [((2, 3, 4), layout)], dtype)


def test_renorm_errors():
    cases = [((ember.ones(2, 3), 0, 0, 1), RuntimeError, "non-positive-norm"),
             ((ember.ones(2, 3), 2, 0, -1), RuntimeError, "maxnorm to be >= 0 but got -1"),
             ((ember.ones(2), 2, 0, 1), RuntimeError, "at least 2 dimensions, got 1"),
             ((ember.tensor(3.0), 2, 0, 1), RuntimeError, "at least 2 dimensions, got 0"),
             ((ember.ones(2, 3), 2, 2, 1), IndexError, "")]
    for args, exc, msg in cases:
        with pytest.raises(exc, match=msg or None):
            ember.renorm(*args)


# -- isin and combinatorics ----------------------------------------------------------------------
def test_isin():
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 10, (3, 4)), rng.integers(0, 10, (2, 3))
    for invert in (False, True):
        for unique in (False, True):
            assert_same(ember.isin(ember.tensor(a).t(), ember.tensor(b)[:, ::2], invert=invert,
                                   assume_unique=unique),
                        # torch's isin cannot take this strided view; its values suffice
                        torch.isin(torch.tensor(a).t(), torch.tensor(b)[:, ::2].contiguous(),
                                   invert=invert,
                                   assume_unique=unique))
    assert_same(ember.isin(ember.tensor([1, 2, 3]), ember.tensor([2.0, 5])),
                torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2.0, 5])))
    assert_same(ember.isin(3, ember.tensor([2.0, 3])), torch.isin(3, torch.tensor([2.0, 3])))
    assert_same(ember.isin(ember.tensor([1, 2]), 2), torch.isin(torch.tensor([1, 2]), 2))
    nan = float("nan")
    assert_same(ember.isin(ember.tensor([1.0, nan]), ember.tensor([nan, 1.0])),
                torch.isin(torch.tensor([1.0, nan]), torch.tensor([nan, 1.0])))
    assert_same(ember.isin(ember.zeros(0), ember.zeros(3)), torch.isin(torch.zeros(0),
                                                                       torch.zeros(3)))
    assert_same(ember.isin(ember.ones(2), ember.zeros(0)), torch.isin(torch.ones(2),
                                                                      torch.zeros(0)))
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        ember.isin(ember.tensor([True]), ember.tensor([True]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_cartesian_prod(dtype):
    check(lambda lib, a, b, c: lib.cartesian_prod(a, b, c),
          [((3,), "strided"), ((2,), "contiguous"), ((4,), "strided")], dtype)
    (e, ev), (t, tv) = pair((3,), dtype)
    assert ember.cartesian_prod(ev) is ev
    assert_same(ember.cartesian_prod(ember.tensor([1, 2]), ember.zeros(0, dtype=ember.int64)),
                torch.cartesian_prod(torch.tensor([1, 2]), torch.zeros(0, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        ember.cartesian_prod(ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.cartesian_prod(ember.zeros(2), ember.zeros(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="non-empty TensorList"):
        ember.cartesian_prod()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(dtype, r, with_replacement):
    check(lambda lib, x: lib.combinations(x, r, with_replacement), [((4,), "strided")], dtype,
          grad=r > 0)
    assert_same(ember.combinations(ember.zeros(0), r, with_replacement),
                torch.combinations(torch.zeros(0), r, with_replacement))


def test_combinations_errors():
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        ember.combinations(ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        ember.combinations(ember.zeros(3), -1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_block_diag(dtype):
    check(lambda lib, a, b, c, d: lib.block_diag(a, b, c, d),
          [((2, 3), "transposed"), ((), "contiguous"), ((3,), "strided"), ((0, 2), "contiguous")],
          dtype)
    assert_same(ember.block_diag(ember.tensor(2), ember.ones(2, dtype=ember.float64)),
                torch.block_diag(torch.tensor(2), torch.ones(2, dtype=torch.float64)))
    assert_same(ember.block_diag(), torch.block_diag())
    with pytest.raises(RuntimeError, match="Input 0 has 3 dimensions"):
        ember.block_diag(ember.zeros(2, 2, 2))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("N", [None, 0, 1, 4])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(dtype, N, increasing):
    # torch.vander's own backward fails (it writes into a tensor cumprod saved), so the
    # gradient is checked against the same matrix built from powers
    out = check(lambda lib, x: lib.vander(x, N=N, increasing=increasing), [((3,), "strided")],
                dtype, grad=False)
    (e, ev), (t, tv) = pair((3,), dtype, "strided", grad=True)
    n = 3 if N is None else N
    powers = torch.arange(n) if increasing else torch.arange(n - 1, -1, -1)
    to = tv.unsqueeze(1) ** powers
    eo = ember.vander(ev, N=N, increasing=increasing)
    assert_same(eo, to, dtype)
    assert_same(out, to, dtype)
    if n > 1:  # with N <= 1 the result does not depend on x (no graph, as in torch)
        g = _arr((3, n), dtype, 4)
        (eo * ember.tensor(g)).sum().backward()
        (to * torch.tensor(g)).sum().backward()
        assert_same(e.grad, t.grad, dtype)


def test_vander_dtypes_and_errors():
    for a in (np.array([1, 2, 3], np.int8), np.array([True, False])):
        assert_same(ember.vander(ember.tensor(a)), torch.vander(torch.tensor(a)))
    with pytest.raises(RuntimeError, match="x must be a one-dimensional tensor"):
        ember.vander(ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="N must be non-negative"):
        ember.vander(ember.zeros(2), N=-1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_chain_matmul(dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, a, b, c, d: lib.chain_matmul(a, b, c, d),
              [((2, 5), "transposed"), ((5, 1), "contiguous"), ((1, 6), "strided"),
               ((6, 3), "transposed")], dtype)
        out = check(lambda lib, a: lib.chain_matmul(a), [((2, 3), "strided")], dtype)
        assert out.is_contiguous()
        for args, msg in [((), "Expected one or more matrices"),
                          ((ember.zeros(2),), "Tensor dimension is 1, expected 2"),
                          ((ember.zeros(2, 3), ember.zeros(4, 3)), "cannot be multiplied")]:
            with pytest.raises(RuntimeError, match=msg):
                ember.chain_matmul(*args)


# -- pointwise helpers -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp(dtype, name):
    check(lambda lib, a, b: getattr(lib, name)(a, b), [((3, 4), "transposed"), ((4,), "strided")],
          dtype)
    check(lambda lib, a, b: getattr(a, name)(b), [((3, 4), "contiguous"), ((3, 4), "strided")],
          dtype)
    inf, nan = math.inf, math.nan
    a, b = [1.0, -inf, inf, nan, -inf, inf, 50.0], [1.0, -inf, inf, -inf, 3.0, -inf, -50.0]
    np_dtype = getattr(np, dtype)
    assert_same(getattr(ember, name)(ember.tensor(np.array(a, np_dtype)),
                                     ember.tensor(np.array(b, np_dtype))),
                getattr(torch, name)(torch.tensor(np.array(a, np_dtype)),
                                     torch.tensor(np.array(b, np_dtype))), dtype)
    assert_same(getattr(ember, name)(ember.ones(1), ember.ones(1, dtype=ember.float64)),
                getattr(torch, name)(torch.ones(1), torch.ones(1, dtype=torch.float64)))
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Long\''):
        getattr(ember, name)(ember.tensor([1, 2]), ember.tensor([1, 2]))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sinc(dtype, layout):
    check(lambda lib, x: lib.sinc(x), [((3, 4), layout)], dtype)
    check(lambda lib, x: x.sinc(), [((3, 4), layout)], dtype)
    x = np.array([0.0, 1.0, -2.0, 0.5, math.inf, math.nan], getattr(np, dtype))
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    assert_same(ember.sinc(e), torch.sinc(t), dtype)
    ember.sinc(e)[:4].sum().backward()
    torch.sinc(t)[:4].sum().backward()
    assert_same(e.grad, t.grad, dtype)
    for a in ([0, 1, 2], [True, False]):
        assert_same(ember.sinc(ember.tensor(a)), torch.sinc(torch.tensor(a)), "float32")


@pytest.mark.parametrize("dtype", FLOATS)
def test_ldexp(dtype):
    exps = np.array([[1, 3, 0, 5]])
    (e, ev), (t, tv) = pair((3, 4), dtype, "transposed", grad=True)
    eo, to = ember.ldexp(ev, ember.tensor(exps)), torch.ldexp(tv, torch.tensor(exps))
    assert_same(eo, to, dtype)
    g = _arr((3, 4), dtype, 7)
    (eo * ember.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    assert_same(e.grad, t.grad, dtype)
    assert_same(ev.ldexp(ember.tensor(exps)), tv.ldexp(torch.tensor(exps)), dtype)
    # torch's backward uses an integer power for integer exponents (2**-3 -> 0); ember's
    # gradient is the exact 2**other
    x = ember.ones(3, dtype=getattr(ember, dtype), requires_grad=True)
    ember.ldexp(x, ember.tensor([-3, 0, 2])).sum().backward()
    assert x.grad.tolist() == [0.125, 1.0, 4.0]
    for a, b in [([1, 2], [1, 2]), ([1.0, 2.0], [1, 200]), ([1, 2], np.array([1.0, 2.0]))]:
        assert_same(ember.ldexp(ember.tensor(a), ember.tensor(b)),
                    torch.ldexp(torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_frexp(dtype):
    np_dtype = getattr(np, dtype)
    tiny = np.finfo(np_dtype).smallest_subnormal
    special = [0.0, -0.0, 1.0, 3.0, -0.75, math.inf, -math.inf, math.nan, 1e-40, tiny, -tiny,
               np.finfo(np_dtype).max, np.finfo(np_dtype).tiny, np.nextafter(np_dtype(4), 0),
               np.nextafter(np_dtype(1), 2)]
    rng = np.random.default_rng(11)
    vals = np.concatenate([np.array(special, np_dtype),
                           (rng.standard_normal(200) * 10.0 ** rng.integers(-30, 30, 200))
                           .astype(np_dtype)])
    em, ee = ember.frexp(ember.tensor(vals))
    tm, te = torch.frexp(torch.tensor(vals))
    assert type(ember.frexp(ember.ones(1))).__name__ == "frexp"
    assert ee.dtype is ember.int32
    np.testing.assert_array_equal(em.numpy(), tm.numpy())
    finite = np.isfinite(vals)
    np.testing.assert_array_equal(ee.numpy()[finite], te.numpy()[finite])
    (e, ev), (t, tv) = pair((3, 4), dtype, "strided", grad=True)
    check(lambda lib, x: lib.frexp(x * 100).mantissa, [((3, 4), "strided")], dtype)
    assert_same(ev.frexp().exponent, tv.frexp().exponent, "int")
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        ember.frexp(ember.tensor([1, 2]))


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm(name):
    rng = np.random.default_rng(13)
    a, b = rng.integers(-60, 60, (4, 5)), rng.integers(-60, 60, (5,))
    a[0, :2] = 0
    b[0] = 0
    for dtype in ("int32", "int64", "int16", "uint8"):
        x, y = a.astype(dtype), b.astype(dtype) if dtype != "uint8" else np.abs(b).astype(dtype)
        x = np.abs(x).astype(dtype) if dtype == "uint8" else x
        assert_same(getattr(ember, name)(ember.tensor(x).t().t()[:, ::1], ember.tensor(y)),
                    getattr(torch, name)(torch.tensor(x), torch.tensor(y)), "int")
    assert_same(getattr(ember.tensor(a, dtype=ember.int32), name)(ember.tensor(b)),
                getattr(torch.tensor(a, dtype=torch.int32), name)(torch.tensor(b)), "int")
    for bad, tn in ((ember.ones(2), "Float"), (ember.tensor([True]), "Bool")):
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'{tn}\''):
            getattr(ember, name)(bad, bad)


def test_exports_and_methods():
    for name in ember.ops.numeric.__all__:
        assert getattr(ember, name) is getattr(ember.ops.numeric, name)
        assert ember.ops.numeric.__dict__[name].__doc__
        assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name), name


# -- in-place forms ---------------------------------------------------------------------------
@pytest.mark.parametrize("name,args", [
    ("sinc_", ()), ("ldexp_", ("exp",)), ("gcd_", ("int",)), ("lcm_", ("int",)),
    ("renorm_", (2, 0, 1.0)), ("renorm_", (1, 1, 0.5))])
def test_inplace_forms_match_torch(name, args):
    """The in-place variants write into ``self`` (same object, one version bump) the values
    torch's in-place variants give; gradients flow through them to an upstream leaf."""
    integer = args == ("int",)
    base = torch.tensor([[4, 6, 9], [10, 15, 0]]) if integer else \
        torch.tensor([[0.5, 0.0, -1.5], [2.0, -3.0, 0.25]], dtype=torch.float64)
    if args == ("int",):
        args = (torch.tensor([6, 9, 12]),)
    elif args == ("exp",):
        args = (torch.tensor([1, 2, 3]),)
    t = base.clone()
    getattr(t, name)(*args)
    e = ember.tensor(base.numpy())
    before = e._version
    out = getattr(e, name)(*[ember.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a
                             for a in args])
    assert out is e and e._version > before
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)
    if not integer:
        leaf = ember.tensor(base.numpy(), requires_grad=True)
        y = leaf * 1
        getattr(y, name)(*[ember.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a
                           for a in args])
        y.sum().backward()
        tleaf = base.clone().requires_grad_(True)
        ty = tleaf * 1
        getattr(ty, name)(*args)
        ty.sum().backward()
        np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-9,
                                   atol=1e-12)


def test_inplace_forms_refuse_what_torch_refuses():
    for call, msg in [(lambda m: m.arange(4).sinc_(), "can't be cast to the desired output"),
                      (lambda m: m.arange(4).ldexp_(m.tensor([1, 2, 3, 4])),
                       "ldexp can't be cast to the desired output type Long")]:
        with pytest.raises(RuntimeError, match="can't be cast") as t_err:
            call(torch)
        with pytest.raises(RuntimeError, match=msg) as e_err:
            call(ember)
        assert str(e_err.value) == str(t_err.value)
    assert hasattr(ember, "sinc_") and not hasattr(ember, "renorm_")
