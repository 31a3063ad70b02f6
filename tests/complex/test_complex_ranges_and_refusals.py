"""Complex linspace/logspace, dist, logaddexp and log1p against torch (values, dtypes,
gradients, gradcheck), and torch's refusals of complex softmax, sort, topk, kthvalue and
unique (exception type and message)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck

_RNG = np.random.default_rng(23)
_EPS = {"complex64": np.finfo(np.float32).eps, "complex128": np.finfo(np.float64).eps,
        "float32": np.finfo(np.float32).eps, "float64": np.finfo(np.float64).eps}


def _complex(shape) -> np.ndarray:
    return _RNG.uniform(-2, 2, shape) + 1j * _RNG.uniform(-2, 2, shape)


def _check(got, want, rtol, atol=None) -> None:
    g, w = got.detach().resolve_conj().numpy(), want.detach().resolve_conj().numpy()
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol if atol is None else atol,
                               equal_nan=True)


def _both(fn):
    """``(ember's, torch's)`` results of ``fn(lib)``, or the exceptions they raise."""
    out = []
    for lib in (ember, torch):
        try:
            out.append(fn(lib))
        except Exception as exc:  # noqa: BLE001 - compared below
            out.append(exc)
    return out


# -- linspace / logspace ----------------------------------------------------------------------
BOUNDS = [(0, 1 + 1j), (1j, 2), (-0.7 + 0.1j, 2.3 - 3.3j), (0.5, 2.3), (1 + 1j, 1 + 1j),
          (3 - 2j, -1.5 + 0.25j)]


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("steps", [0, 1, 2, 5, 100, 101])
@pytest.mark.parametrize("dtype", [None, "complex64", "complex128"])
def test_linspace_matches_torch(bounds, steps, dtype):
    start, end = bounds
    kw = {} if dtype is None else {"dtype": dtype}
    if dtype is None and not any(isinstance(v, complex) for v in bounds):
        return  # a real range: covered by the op table
    e, t = _both(lambda L: L.linspace(start, end, steps, **{k: getattr(L, v)
                                                             for k, v in kw.items()}))
    # two-ended stepping: each value is start + step * i (a few roundings of the range)
    d = str(t.dtype).removeprefix("torch.")
    scale = max(abs(start), abs(end), 1)
    _check(e, t, _EPS[d] * 8, _EPS[d] * 8 * scale)


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("steps", [0, 1, 2, 7, 50])
@pytest.mark.parametrize("base", [10.0, 2.0, 1.7, -2.0])
@pytest.mark.parametrize("dtype", [None, "complex64", "complex128"])
def test_logspace_matches_torch(bounds, steps, base, dtype):
    start, end = bounds
    kw = {} if dtype is None else {"dtype": dtype}
    if dtype is None and not any(isinstance(v, complex) for v in bounds):
        return
    e, t = _both(lambda L: L.logspace(start, end, steps, base,
                                      **{k: getattr(L, v) for k, v in kw.items()}))
    d = str(t.dtype).removeprefix("torch.")
    # exp(x log b): relative error ~ eps * |x log b| from the exponent's rounding
    cond = max(abs(start), abs(end), 1) * abs(complex(np.log(complex(base)))) + 1
    tol = _EPS[d] * 16 * cond
    _check(e, t, tol, tol * float(np.abs(t.numpy()).min(initial=1.0)))


def test_range_bounds_from_complex_tensors_and_default_dtype():
    for L in (torch, ember):
        assert L.linspace(L.tensor(1j), 2, 3).dtype == L.complex64
        assert L.logspace(L.tensor(1 + 0j), 2, 3).dtype == L.complex64
    previous = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        e, t = _both(lambda L: L.linspace(1j, 2, 5))
        _check(e, t, 1e-15)
        e, t = _both(lambda L: L.logspace(1j, 2, 5))
        _check(e, t, 1e-13)
        e, t = _both(lambda L: L.linspace(1j, 2, 5, dtype=L.float64))
        assert type(e) is type(t) is RuntimeError
        assert str(e) == str(t)  # ... c10::complex<double> can't be safely cast to ... Double
    finally:
        ember.set_default_dtype(previous)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("op", ["linspace", "logspace"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int8", "uint8"])
def test_complex_bounds_refuse_a_real_dtype_as_torch(op, dtype):
    e, t = _both(lambda L: getattr(L, op)(1j, 2, 3, dtype=getattr(L, dtype)))
    assert type(e) is type(t) is RuntimeError
    assert str(e) == str(t)  # torch.linspace(): inferred dtype ... can't be safely cast to ...
    e, t = _both(lambda L: getattr(L, op)(1j, 2, 3, out=L.empty(3, dtype=getattr(L, dtype))))
    assert type(e) is type(t) is RuntimeError
    assert str(e) == str(t)  # value cannot be converted to type ... without overflow


def test_complex_bound_without_imaginary_part_fills_a_real_out():
    e, t = _both(lambda L: L.linspace(1 + 0j, 2, 3, out=L.empty(3)))
    _check(e, t, 0)


# -- dist ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf, -math.inf, 0])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_dist_matches_torch(p, dtype):
    a, b = _complex((3, 4)), _complex((4,))
    results = {}
    for lib in (torch, ember):
        x = lib.tensor(a, dtype=getattr(lib, dtype)).mT.contiguous().mT  # column-major
        x.requires_grad_(True)
        y = lib.tensor(b, dtype=getattr(lib, dtype), requires_grad=True)
        out = lib.dist(x, y, p)
        grads = lib.autograd.grad(out, (x, y)) if p != 0 else ()
        results[lib] = (out, grads)
    (eo, eg), (to, tg) = results[ember], results[torch]
    tol = _EPS[dtype] * 64
    _check(eo, to, tol)
    for e, t in zip(eg, tg, strict=True):
        _check(e, t, tol)


@pytest.mark.parametrize("p", [2, 1, 3, math.inf])
def test_dist_gradcheck_complex128(p):
    x = ember.tensor(_complex((3, 4)), requires_grad=True)
    y = ember.tensor(_complex((3, 4)), requires_grad=True)
    assert gradcheck(lambda a, b: ember.dist(a, b, p), (x, y))


# -- logaddexp ----------------------------------------------------------------------------------
def _special_pairs():
    inf, nan = math.inf, math.nan
    a = [complex(inf, 1), complex(inf, 1), complex(-inf, 1), complex(-inf, 2), complex(nan, 0),
         1 + 1j, complex(inf, 0), 1 + 2j, complex(-inf, 0), 3 - 1j, 0j, complex(0, nan)]
    b = [complex(inf, 2), complex(-inf, 1), complex(-inf, 3), complex(1, 1), 2 + 0j,
         complex(1, nan), complex(1, 0), 1 + 2j, complex(-inf, 0), -2 + 5j, -40 + 1j, 1 + 0j]
    return np.array(a), np.array(b)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_logaddexp_matches_torch(dtype):
    tol = _EPS[dtype] * 32
    a, b = _complex((3, 4)), _complex((4,))
    for x, y in ((a, b), (a * 30, b), _special_pairs()):
        e, t = _both(lambda L, x=x, y=y: L.logaddexp(L.tensor(x, dtype=getattr(L, dtype)),
                                                     L.tensor(y, dtype=getattr(L, dtype))))
        _check(e, t, tol)
    # a real operand is promoted (float64 with complex64 gives complex128, as torch)
    for other in (np.array([0.5, -1.0, 2.0, 3.0]), np.array([1, 2, 3, 4])):
        e, t = _both(lambda L, o=other: L.logaddexp(L.tensor(a, dtype=getattr(L, dtype)),
                                                    L.tensor(o)))
        _check(e, t, tol)
        e, t = _both(lambda L, o=other: L.logaddexp(L.tensor(o),
                                                    L.tensor(a, dtype=getattr(L, dtype))))
        _check(e, t, tol)


def test_logaddexp_gradients_match_torch_and_gradcheck():
    a, b = _complex((3, 4)), _complex((3, 4))
    results = {}
    for lib in (torch, ember):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = lib.logaddexp(x, y)
        w = lib.tensor(np.linspace(0.5, 1.5, 12).reshape(3, 4))
        loss = (out.real * w + out.imag * w * w).sum()
        results[lib] = lib.autograd.grad(loss, (x, y))
    for e, t in zip(results[ember], results[torch], strict=True):
        _check(e, t, 1e-13)
    x = ember.tensor(a, requires_grad=True)
    y = ember.tensor(b, requires_grad=True)
    assert gradcheck(ember.logaddexp, (x, y))
    assert gradcheck(lambda u: ember.logaddexp(u, ember.tensor(0.5)), (x,))


def test_logaddexp2_refuses_complex_as_torch():
    e, t = _both(lambda L: L.logaddexp2(L.tensor([1 + 1j]), L.tensor([2 + 0j])))
    assert type(e) is type(t) is NotImplementedError
    assert str(e) == str(t)  # "logaddexp2_cpu" not implemented for 'ComplexFloat'


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_log1p_of_small_complex_values_matches_torch(dtype):
    z = np.array([1e-9 + 1e-9j, 1e-5 - 2e-6j, -0.3 + 0.2j, 2 + 3j, 1e-20 + 0j, -1 + 0j,
                  complex(math.inf, 1), complex(math.nan, 0), 0.4 + 0.29j, -0.2 - 0.45j])
    e, t = _both(lambda L: L.log1p(L.tensor(z, dtype=getattr(L, dtype))))
    _check(e, t, _EPS[dtype] * 8, 0)


# -- refusals ---------------------------------------------------------------------------------
def _x(lib, shape=(3, 2), dtype="complex64"):
    return lib.ones(shape, dtype=getattr(lib, dtype))


REFUSALS = {
    "softmax_dim0": lambda L: L.softmax(_x(L), 0),
    "softmax_lastdim": lambda L: L.softmax(_x(L), -1),
    "softmax_1d": lambda L: L.softmax(_x(L, (3,)), 0),
    "softmax_0d": lambda L: L.softmax(_x(L, ()), 0),
    "softmax_dtype": lambda L: L.softmax(L.ones(3), 0, dtype=L.complex128),
    "log_softmax_dim0": lambda L: L.log_softmax(_x(L, dtype="complex128"), 0),
    "log_softmax_lastdim": lambda L: L.log_softmax(_x(L), 1),
    "Tensor.softmax": lambda L: _x(L).softmax(1),
    "F.softmax": lambda L: L.nn.functional.softmax(_x(L), 0),
    "F.log_softmax": lambda L: L.nn.functional.log_softmax(_x(L), 1),
    "F.softmin": lambda L: L.nn.functional.softmin(_x(L), 1),
    "special.softmax": lambda L: L.special.softmax(_x(L), 1),
    "special.log_softmax": lambda L: L.special.log_softmax(_x(L), 0),
    "softmax_int": lambda L: L.softmax(L.ones(3, 2, dtype=L.int64), 0),
    "sort": lambda L: L.sort(_x(L)),
    "sort_empty": lambda L: L.sort(_x(L, (0,))),
    "sort_0d": lambda L: L.sort(_x(L, ())),
    "sort_stable": lambda L: L.sort(_x(L), stable=True, descending=True),
    "sort_bad_dim": lambda L: L.sort(_x(L, (3,)), dim=3),
    "sort_out": lambda L: L.sort(_x(L), out=(L.empty(0, dtype=L.complex64),
                                             L.empty(0, dtype=L.int64))),
    "Tensor.sort": lambda L: _x(L).sort(0),
    "argsort": lambda L: L.argsort(_x(L)),
    "argsort_stable": lambda L: L.argsort(_x(L), stable=True),
    "msort": lambda L: L.msort(_x(L, (0, 2))),
    "topk": lambda L: L.topk(_x(L), 1),
    "topk_k0": lambda L: L.topk(_x(L), 0),
    "topk_k_too_big": lambda L: L.topk(_x(L), 5),
    "Tensor.topk": lambda L: _x(L, ()).topk(1),
    "kthvalue": lambda L: L.kthvalue(_x(L), 1),
    "kthvalue_empty_batch": lambda L: L.kthvalue(_x(L, (0, 3)), 1),
    "kthvalue_empty_dim": lambda L: L.kthvalue(_x(L, (0,)), 1),
    "kthvalue_k_too_big": lambda L: L.kthvalue(_x(L, (3,)), 5),
    "unique": lambda L: L.unique(_x(L)),
    "unique_empty": lambda L: L.unique(_x(L, (0,)), return_inverse=True, return_counts=True),
    "unique_dim": lambda L: L.unique(_x(L), dim=1),
    "unique_dim_0d": lambda L: L.unique(_x(L, ()), dim=0),
    "Tensor.unique": lambda L: _x(L).unique(sorted=False),
    "unique_consecutive": lambda L: L.unique_consecutive(_x(L)),
    "unique_consecutive_dim": lambda L: L.unique_consecutive(_x(L), dim=0),
}


def _assert_same_refusal(name, fn):
    """ember and torch both raise, with the same exception type and message."""
    e, t = _both(fn)
    assert isinstance(t, Exception), f"torch accepted {name}"
    assert type(e) is type(t), (e, t)
    assert str(e) == str(t)


@pytest.mark.parametrize("name", REFUSALS)
def test_complex_refusals_match_torch(name):
    _assert_same_refusal(name, REFUSALS[name])


def test_refusals_leave_accepted_cases_alone():
    # a 0-d kthvalue and empty softmax inputs are returned as torch returns them
    for fn in (lambda L: L.kthvalue(L.tensor(1 + 2j), 1).values,
               lambda L: L.softmax(_x(L, (0, 3)), 1),
               lambda L: L.log_softmax(L.ones(0, 2, dtype=L.int64), 0)):
        e, t = _both(fn)
        _check(e, t, 0)


def test_softmax_into_a_real_dtype_warns_as_torch():
    z = _complex((3, 2))
    with pytest.warns(UserWarning, match="Casting complex values to real discards"):
        e = ember.softmax(ember.tensor(z), 1, dtype=ember.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.softmax(torch.tensor(z), 1, dtype=torch.float64)
    _check(e, t, 1e-15)


# -- nn ops on complex inputs ---------------------------------------------------------------------
NN_REFUSALS = {
    "elu": lambda L: L.nn.functional.elu(_x(L)),
    "celu": lambda L: L.nn.functional.celu(_x(L)),
    "selu": lambda L: L.nn.functional.selu(_x(L)),
    "leaky_relu": lambda L: L.nn.functional.leaky_relu(_x(L)),
    "logsigmoid": lambda L: L.nn.functional.logsigmoid(_x(L)),
    "gelu": lambda L: L.nn.functional.gelu(_x(L)),
    "softplus": lambda L: L.nn.functional.softplus(_x(L)),
    "mish": lambda L: L.nn.functional.mish(_x(L)),
    "hardswish": lambda L: L.nn.functional.hardswish(_x(L)),
    "hardsigmoid": lambda L: L.nn.functional.hardsigmoid(_x(L)),
    "silu_autograd": lambda L: L.nn.functional.silu(_x(L).requires_grad_()),
}


@pytest.mark.parametrize("name", NN_REFUSALS)
def test_nn_refusals_match_torch(name):
    e, t = _both(NN_REFUSALS[name])
    assert isinstance(t, Exception), f"torch accepted {name}"
    assert type(e) is type(t), (e, t)
    assert str(e) == str(t)


@pytest.mark.parametrize("name", ["avg_pool2d", "max_pool2d", "max_pool1d", "adaptive_max_pool2d",
                                  "interpolate"])
def test_pooling_refuses_complex_with_torch_type(name):
    fns = {"avg_pool2d": lambda L, x: L.nn.functional.avg_pool2d(x, 2),
           "max_pool2d": lambda L, x: L.nn.functional.max_pool2d(x, 2),
           "max_pool1d": lambda L, x: L.nn.functional.max_pool1d(x, 2),
           "adaptive_max_pool2d": lambda L, x: L.nn.functional.adaptive_max_pool2d(x, 2),
           "interpolate": lambda L, x: L.nn.functional.interpolate(x, size=6)}
    e, t = _both(lambda L: fns[name](L, _x(L, (2, 3, 4))))
    assert type(e) is type(t) is NotImplementedError, (e, t)
    assert "not implemented for 'ComplexFloat'" in str(e)


def test_silu_and_unfold_fold_of_complex_match_torch():
    z = _complex((1, 2, 4, 5))
    e, t = _both(lambda L: L.nn.functional.silu(L.tensor(z)))
    _check(e, t, 1e-14)
    e, t = _both(lambda L: L.nn.functional.unfold(L.tensor(z), 2))
    _check(e, t, 0)
    y = _complex((1, 8, 6))
    e, t = _both(lambda L: L.nn.functional.fold(L.tensor(y), (3, 4), 2))
    _check(e, t, 1e-15)


MORE_REFUSALS = {
    "deg2rad": lambda L: L.deg2rad(_x(L)),
    "rad2deg_": lambda L: _x(L).rad2deg_(),
    "polygamma1": lambda L: L.polygamma(1, _x(L)),
    "polygamma3": lambda L: L.special.polygamma(3, _x(L)),
    "mvlgamma": lambda L: L.mvlgamma(_x(L), 2),
    "entr": lambda L: L.special.entr(_x(L)),
    "ndtr": lambda L: L.special.ndtr(_x(L)),
    "log_ndtr": lambda L: L.special.log_ndtr(_x(L)),
    "xlog1py": lambda L: L.special.xlog1py(L.ones(3), _x(L, (3,))),
    "searchsorted": lambda L: L.searchsorted(L.ones(4), _x(L, (2,))),
    "bucketize": lambda L: L.bucketize(_x(L, (2,)), L.ones(4)),
    "unravel_index": lambda L: L.unravel_index(_x(L, (2,)), (2, 2)),
    "kl_div": lambda L: L.nn.functional.kl_div(_x(L), _x(L), reduction="sum"),
    "cosine_similarity": lambda L: L.nn.functional.cosine_similarity(_x(L), L.ones(3, 2)),
    "group_norm": lambda L: L.nn.functional.group_norm(_x(L, (2, 2, 3)), 1),
    "batch_norm": lambda L: L.nn.functional.batch_norm(_x(L, (2, 2, 3)), None, None,
                                                       training=True),
    "instance_norm": lambda L: L.nn.functional.instance_norm(_x(L, (2, 2, 3))),
    "arange": lambda L: L.arange(4, dtype=L.complex64),
    "arange_bound": lambda L: L.arange(1j, 3),
    "hann_window": lambda L: L.hann_window(4, dtype=L.complex128),
}


@pytest.mark.parametrize("name", MORE_REFUSALS)
def test_more_complex_refusals_match_torch(name):
    e, t = _both(MORE_REFUSALS[name])
    assert isinstance(t, Exception), f"torch accepted {name}"
    assert type(e) is type(t), (e, t)
    assert str(e).replace("ember.", "") == str(t).replace("torch.", "")


RANDOM_AND_CLAMP_REFUSALS = {
    "random_": lambda L: _x(L).random_(),
    "random_to": lambda L: _x(L).random_(5),
    "randint": lambda L: L.randint(0, 3, (2,), dtype=L.complex64),
    "randint_like": lambda L: L.randint_like(_x(L), 3),
    "randperm": lambda L: L.randperm(3, dtype=L.complex128),
    "bernoulli_p": lambda L: L.bernoulli(_x(L), 0.3),
    "bernoulli": lambda L: L.bernoulli(_x(L)),
    "bernoulli_tensor_": lambda L: _x(L, (3,)).bernoulli_(L.ones(3) * 0.5),
    "geometric_": lambda L: _x(L).geometric_(0.5),
    "hardtanh": lambda L: L.nn.functional.hardtanh(_x(L)),
    "relu6": lambda L: L.nn.functional.relu6(_x(L)),
    "glu": lambda L: L.nn.functional.glu(_x(L, (2, 4))),
    "invert": lambda L: ~_x(L),
}


@pytest.mark.parametrize("name", RANDOM_AND_CLAMP_REFUSALS)
def test_random_and_clamp_refusals_match_torch(name):
    _assert_same_refusal(name, RANDOM_AND_CLAMP_REFUSALS[name])


def test_empty_complex_tensors_skip_the_random_kernels_as_torch():
    for fn in (lambda L: _x(L, (0,)).random_(), lambda L: _x(L, (0,)).geometric_(0.5),
               lambda L: _x(L, (0,)).bernoulli_(0.5)):
        e, t = _both(fn)
        assert tuple(e.shape) == tuple(t.shape) == (0,)


SCATTER_REFUSALS = {
    "scatter_reduce_amax": lambda L: _x(L, (2, 3)).scatter_reduce(
        0, L.tensor([[0, 1, 0]]), _x(L, (1, 3)), "amax"),
    "scatter_reduce__amin": lambda L: _x(L, (2, 3)).scatter_reduce_(
        0, L.tensor([[0, 1, 0]]), _x(L, (1, 3)), "amin"),
    "scatter_reduce_autograd": lambda L: _x(L, (2, 3)).scatter_reduce(
        0, L.tensor([[0, 1, 0]]), _x(L, (1, 3)).requires_grad_(), "sum"),
    "index_reduce_exclude_self": lambda L: _x(L, (2, 3)).index_reduce(
        0, L.tensor([1]), _x(L, (1, 3)), "prod", include_self=False),
    "index_reduce_amax": lambda L: _x(L, (2, 3)).index_reduce(0, L.tensor([1]), _x(L, (1, 3)),
                                                              "amax"),
    "index_reduce_autograd": lambda L: _x(L, (2, 3)).requires_grad_().index_reduce(
        0, L.tensor([1]), _x(L, (1, 3)), "mean"),
}


@pytest.mark.parametrize("name", SCATTER_REFUSALS)
def test_scatter_and_index_reduce_refusals_match_torch(name):
    e, t = _both(SCATTER_REFUSALS[name])
    assert isinstance(t, Exception), f"torch accepted {name}"
    assert type(e) is type(t), (e, t)
    assert str(e) == str(t)


def test_complex_normal_and_uniform_fill_each_part_as_torch():
    n = 20000
    for lib in (ember, torch):
        lib.manual_seed(3)
        z = lib.zeros(n, dtype=lib.complex128).normal_(2.0, 3.0)
        u = lib.zeros(n, dtype=lib.complex64).uniform_(-1.0, 3.0)
        m = lib.normal(lib.full((n,), 1 + 2j, dtype=lib.complex128), 2.0)
        assert z.dtype == lib.complex128 and u.dtype == lib.complex64 and m.dtype == z.dtype
        # each part N(mean, std^2 / 2): 5 standard errors of the sample statistics
        for part in (z.real, z.imag):
            assert abs(part.mean().item() - 2.0) < 5 * 3.0 / math.sqrt(2 * n)
            assert abs(part.std().item() - 3.0 / math.sqrt(2)) < 5 * 3.0 / math.sqrt(4 * n)
        for part in (u.real, u.imag):
            assert -1.0 <= part.min().item() and part.max().item() < 3.0
        assert abs(m.imag.mean().item() - 2.0) < 5 * 2.0 / math.sqrt(2 * n)
    e, t = _both(lambda L: L.normal(L.zeros(3), L.ones(3, dtype=L.complex64)))
    assert type(e) is type(t) is RuntimeError and str(e) == str(t)
