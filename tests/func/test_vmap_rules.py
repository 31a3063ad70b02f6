"""Batching rules for indexing, scatter, transposed convolution, FFT, complex views and linear
algebra: no per-example loop, values against torch.func.vmap and a Python loop, gradients
through vmap(grad), batch dims in different positions and non-contiguous inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.nn.functional as F
from ember.func import grad, vmap

B = 3


def _nn(lib):
    return F if lib is ember else torch.nn.functional


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _idx(rng, shape, high):
    return rng.integers(0, high, shape)


# (id, f(lib, *xs) -> real tensor, make(rng) -> per-example arrays, in_dims, differentiable
# argument positions). Integer arrays are index tensors.
CASES = [
    ("index_select_batched_index",
     lambda lib, x, i: x.index_select(1, i), lambda r: [r.standard_normal((4, 5, 2)),
                                                        _idx(r, (6,), 5)], (0, 0), (0,)),
    ("index_select_index_only", lambda lib, x, i: x.index_select(0, i),
     lambda r: [r.standard_normal((4, 2)), _idx(r, (3,), 4)], (None, 0), (0,)),
    ("scatter_src", lambda lib, x, i, s: x.scatter(1, i, s),
     lambda r: [r.standard_normal((3, 5)), _idx(r, (3, 2), 5), r.standard_normal((3, 2))],
     (0, 1, 0), (0, 2)),
    ("scatter_add", lambda lib, x, i, s: x.scatter_add(0, i, s),
     lambda r: [r.standard_normal((4, 3)), _idx(r, (5, 3), 4), r.standard_normal((5, 3))],
     (1, 0, None), (0, 2)),
    ("scatter_reduce_amax", lambda lib, x, i, s: x.scatter_reduce(0, i, s, "amax"),
     lambda r: [r.standard_normal((4,)), _idx(r, (6,), 4), r.standard_normal((6,))],
     (0, 0, 0), (0, 2)),
    ("index_put_accumulate",
     lambda lib, x, i, v: x.index_put((i,), v, accumulate=True),
     lambda r: [r.standard_normal((5, 2)), _idx(r, (4,), 5), r.standard_normal((4, 2))],
     (0, 0, 1), (0, 2)),
    ("setitem_batched_values", lambda lib, x, i, v: _setitem(x, i, v),
     lambda r: [r.standard_normal((5, 3)), np.array([4, 0]), r.standard_normal((3,))],
     (0, None, 0), (0, 2)),
    ("conv_transpose1d_batched_weight",
     lambda lib, x, w, b: _nn(lib).conv_transpose1d(x, w, b, stride=2, groups=2),
     lambda r: [r.standard_normal((2, 4, 5)), r.standard_normal((4, 3, 3)),
                r.standard_normal((6,))], (None, 0, 0), (0, 1, 2)),
    ("conv_transpose2d_both_batched",
     lambda lib, x, w: _nn(lib).conv_transpose2d(x, w, padding=1),
     lambda r: [r.standard_normal((2, 4, 4)), r.standard_normal((2, 3, 3, 3))], (0, 3), (0, 1)),
    ("fft_rfft_irfft", lambda lib, x: lib.fft.irfft(lib.fft.rfft(x, dim=0) * 2, n=6, dim=0),
     lambda r: [r.standard_normal((6, 2))], 1, (0,)),
    ("fft_view_as_real", lambda lib, x: lib.view_as_real(lib.fft.fft(x)).sum(-1),
     lambda r: [r.standard_normal((2, 5))], 0, (0,)),
    ("tril_triu", lambda lib, x: x.tril(-1) + x.triu(1) * 2, lambda r: [r.standard_normal((4, 4))],
     1, (0,)),
    ("linalg_inv", lambda lib, a: lib.linalg.inv(a), lambda r: [_spd(r, 3)], 2, (0,)),
    ("linalg_det", lambda lib, a: lib.linalg.det(a), lambda r: [_spd(r, 3)], 0, (0,)),
    ("linalg_cholesky", lambda lib, a: lib.linalg.cholesky(a), lambda r: [_spd(r, 3)], 1, (0,)),
    ("linalg_solve_vector", lambda lib, a, b: lib.linalg.solve(a, b),
     lambda r: [_spd(r, 3), r.standard_normal((3,))], (0, 0), (0, 1)),
    ("linalg_solve_rhs_only", lambda lib, a, b: lib.linalg.solve(a, b),
     lambda r: [_spd(r, 3), r.standard_normal((3, 2))], (None, 2), (0, 1)),
    ("linalg_solve_matrix_batched_a", lambda lib, a, b: lib.linalg.solve(a, b),
     lambda r: [np.stack([_spd(r, 3), _spd(r, 3)]), r.standard_normal((2, 3, 2))],
     (1, None), (0, 1)),
    ("vector_norm", lambda lib, x: lib.linalg.vector_norm(x, dim=-1),
     lambda r: [r.standard_normal((2, 4))], 0, (0,)),
    ("max_pool2d_examples_with_a_batch",
     lambda lib, x: _nn(lib).max_pool2d(x, 2, stride=1) + _nn(lib).avg_pool2d(x, 2, stride=1),
     lambda r: [r.standard_normal((2, 3, 4, 4))], 0, (0,)),
    ("adaptive_avg_pool1d", lambda lib, x: _nn(lib).adaptive_avg_pool1d(x, 3),
     lambda r: [r.standard_normal((2, 3, 7))], 2, (0,)),
    ("pad_reflect_examples_with_a_batch", lambda lib, x: _nn(lib).pad(x, (2, 1), mode="reflect"),
     lambda r: [r.standard_normal((2, 3, 5))], 1, (0,)),
    ("interpolate_bilinear", lambda lib, x: _nn(lib).interpolate(x, size=(5, 3),
                                                                  mode="bilinear"),
     lambda r: [r.standard_normal((1, 2, 3, 4))], 0, (0,)),
    ("reductions_of_0d_examples",
     lambda lib, x: (x.sum(0) + x.mean(-1, keepdim=True) + x.amax(0) + x.logsumexp(0)
                     + x.softmax(0) + x.cumsum(0) + x.sort(0)[0] + x.nanmedian()),
     lambda r: [r.standard_normal(())], 0, (0,)),
    ("conj_of_fft", lambda lib, x: lib.view_as_real(lib.fft.fft(x).conj().resolve_conj()),
     lambda r: [r.standard_normal((4,))], 0, (0,)),
    ("linalg_cross_broadcast", lambda lib, a, b: lib.linalg.cross(a, b),
     lambda r: [r.standard_normal((2, 3)), r.standard_normal((1, 3))], (1, 0), (0, 1)),
    ("roll_dims_and_flat", lambda lib, x: x.roll(1, 0) + x.roll(2).flip(1),
     lambda r: [r.standard_normal((3, 4))], 2, (0,)),
    ("index_add_copy_fill", lambda lib, x, s: (x.index_add(1, lib.tensor([2, 0]), s, alpha=2)
                                               .index_copy(0, lib.tensor([1]), x[:1] * 3)
                                               .index_fill(1, lib.tensor([1]), -1.0)),
     lambda r: [r.standard_normal((2, 3)), r.standard_normal((2, 2))], (0, 1), (0, 1)),
    ("index_add_copy_fill_batched_index",
     lambda lib, x, i, s: (x.index_add(1, i, s, alpha=-2).index_copy(1, i, s * 3)
                           .index_fill(0, i[:1], 0.5)),
     lambda r: [r.standard_normal((2, 4)), r.permutation(4)[:2], r.standard_normal((2, 2))],
     (1, 0, 0), (0, 2)),
    ("index_add_inplace_batched_index",
     lambda lib, x, i, s: (x * 1).index_add_(0, i, s),
     lambda r: [r.standard_normal((4, 2)), _idx(r, (3,), 4), r.standard_normal((3, 2))],
     (0, 0, 2), (0, 2)),
    ("searchsorted_and_bucketize",
     lambda lib, s, v: (lib.searchsorted(s, v) + lib.searchsorted(s, v, right=True)
                        + lib.bucketize(v, s)) * v,
     lambda r: [np.sort(r.standard_normal((5,))), r.standard_normal((2, 3))], (0, 1), (1,)),
    ("searchsorted_rows", lambda lib, s, v: lib.searchsorted(s, v) * v,
     lambda r: [np.sort(r.standard_normal((2, 5)), -1), r.standard_normal((2, 3))], (1, 0),
     (1,)),
    ("vdot", lambda lib, a, b: lib.vdot(a, b), lambda r: [r.standard_normal((4,)),
                                                          r.standard_normal((4,))],
     (0, None), (0, 1)),
    ("einsum_tensordot_kron",
     lambda lib, a, b: (lib.einsum("ij,jk->ki", a, b).sum() + lib.tensordot(a, b, 1)
                        + lib.kron(a[:, :2], b[:2, :2]).sum(0)[:2, None]),
     lambda r: [r.standard_normal((2, 3)), r.standard_normal((3, 2))], (1, 0), (0, 1)),
    ("layer_norm_batched_weight",
     lambda lib, x, w, b: _nn(lib).layer_norm(x, (4,), w, b),
     lambda r: [r.standard_normal((2, 4)), r.standard_normal((4,)), r.standard_normal((4,))],
     (None, 0, 1), (0, 1, 2)),
    ("getitem_batched_index_in_the_middle", lambda lib, x, i: x[:, i, 1:] * 2,
     lambda r: [r.standard_normal((2, 4, 3)), _idx(r, (2, 5), 4)], (2, 0), (0,)),
    ("getitem_non_adjacent_indices", lambda lib, x, i, j: x[i, :, j],
     lambda r: [r.standard_normal((4, 2, 3)), _idx(r, (5,), 4), _idx(r, (1,), 3)],
     (0, 0, None), (0,)),
    ("getitem_unbatched_non_adjacent", lambda lib, x: x[lib.tensor([1, 0]), :, lib.tensor([2])],
     lambda r: [r.standard_normal((4, 2, 3))], 1, (0,)),
    ("index_put_in_the_middle", lambda lib, x, i, v: _put_middle(lib, x, i, v),
     lambda r: [r.standard_normal((2, 4, 3)), r.permutation(4)[:2], r.standard_normal((2, 3))],
     (0, 0, 2), (0, 2)),
    ("index_put_non_adjacent", lambda lib, x, i, j, v: _put_apart(lib, x, i, j, v),
     lambda r: [r.standard_normal((4, 2, 3)), r.permutation(4)[:3], np.array([2, 0, 1]),
                r.standard_normal((2,))], (0, 0, None, 0), (0, 3)),
    ("addmm_inplace_family",
     lambda lib, c, a, b: ((c * 1).addmm_(a, b, beta=0.5, alpha=2).sum()
                           + (c[:, 0] * 1).addmv_(a, b[:, 0]).sum()
                           + (c * 1).addbmm_(a[None], b[None], beta=0).sum()
                           + (c[None] * 1).baddbmm_(a[None], b[None]).sum()),
     lambda r: [r.standard_normal((2, 4)), r.standard_normal((2, 3)), r.standard_normal((3, 4))],
     (0, 1, None), (0, 1, 2)),
    ("take_put", lambda lib, x, i, s: x.take(i) * 2 + x.put(i, s).sum()
     + x.put(i, s, accumulate=True).sum() + (x * 1).put_(i[:1], s[:1]).sum(),
     lambda r: [r.standard_normal((2, 3)), np.array([[0, -1], [4, 0]]),
                r.standard_normal((2, 2))], (1, None, 0), (0, 2)),
    ("take_batched_index", lambda lib, x, i: x.take(i),
     lambda r: [r.standard_normal((4,)), _idx(r, (2, 3), 4) - 2], (0, 1), (0,)),
    ("flip_varargs", lambda lib, x: x.flip(0, -1) + x.flip(1),
     lambda r: [r.standard_normal((2, 3))], 1, (0,)),
    ("matrix_rank_pinv_batched_tolerances",
     lambda lib, a, t: (lib.linalg.pinv(a, atol=t)
                       * lib.linalg.matrix_rank(a, atol=t)[:, None, None]),
     lambda r: [r.standard_normal((2, 3, 3)) * np.array([1.0, 1.0, 1e-3]),
                np.abs(r.standard_normal((2,))) * 1e-2], (0, 0), (0,)),
    ("cumsum_inplace", lambda lib, x: (x * 1).cumsum_(1).cumprod_(0),
     lambda r: [r.standard_normal((2, 3))], 1, (0,)),
    ("outer_trace_diag", lambda lib, a, b: lib.outer(a, b).trace() * lib.diag(a).diag(),
     lambda r: [r.standard_normal((3,)), r.standard_normal((3,))], (0, 0), (0, 1)),
]


# torch.func.vmap of index_put with a batched index after a slice places the values
# differently from torch's own per-example results (torch 2.13)
TORCH_VMAP_DIFFERS = {"index_put_in_the_middle"}


def _put_middle(lib, x, i, v):
    y = x.clone()
    y[:, i] = v
    return y


def _put_apart(lib, x, i, j, v):
    y = x * 1
    y[i, :, j] = v
    return y


def _setitem(x, i, v):
    y = x.clone()
    y[i] = v
    return y


def _batched_arrays(case, seed=0):
    """The case's inputs with a batch of ``B`` at each in_dim, non-contiguous where floating."""
    _, _, make, in_dims, _ = case
    rngs = [np.random.default_rng(seed + k) for k in range(B)]
    per = [make(r) for r in rngs]
    n = len(per[0])
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * n
    out = []
    for j, d in enumerate(dims):
        if d is None:
            out.append(per[0][j])
        else:
            out.append(np.stack([p[j] for p in per], axis=d))
    return out, dims


def _ember(a):
    if a.dtype.kind == "f":  # a strided view of a larger buffer
        big = np.zeros(a.shape + (2,), dtype=a.dtype)
        big[..., 0] = a
        return ember.tensor(big)[..., 0]
    return ember.tensor(a)


def _torch(a):
    return torch.tensor(a)


def _scalar(lib, f):
    return lambda *xs: f(lib, *xs).square().sum()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rule_matches_torch_and_a_loop(case):
    name, f, _, in_dims, diff = case
    arrays, dims = _batched_arrays(case)
    xe = [_ember(a) for a in arrays]
    xt = [_torch(a) for a in arrays]
    assert any(not x.is_contiguous() for x in xe if x.dtype.is_floating_point)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rule runs: no per-example loop
        out_e = vmap(lambda *a: f(ember, *a), in_dims=dims)(*xe)
        grads_e = vmap(grad(_scalar(ember, f), argnums=diff), in_dims=dims)(*xe)
    if name in TORCH_VMAP_DIFFERS:  # torch's eager results per example are the oracle
        per = [[x if d is None else x.select(d, k) for x, d in zip(xt, dims)] for k in range(B)]
        out_t = torch.stack([f(torch, *p) for p in per])
        grads = [tf.grad(_scalar(torch, f), argnums=diff)(*p) for p in per]
        grads_t = [torch.stack(g) for g in zip(*grads)]
    else:
        out_t = tf.vmap(lambda *a: f(torch, *a), in_dims=dims)(*xt)
        grads_t = tf.vmap(tf.grad(_scalar(torch, f), argnums=diff), in_dims=dims)(*xt)
    eps = np.finfo(np.float64).eps
    tol = dict(rtol=1e3 * eps, atol=1e3 * eps)
    assert tuple(out_e.shape) == tuple(out_t.shape)
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), **tol)
    loop = ember.stack([f(ember, *[x if d is None else x.select(d, k) for x, d in zip(xe, dims)])
                        for k in range(B)])
    np.testing.assert_allclose(out_e.numpy(), loop.numpy(), **tol)
    for ge, gt in zip(grads_e, grads_t):
        np.testing.assert_allclose(ge.numpy(), gt.numpy(), **tol)


def test_cross_of_examples_of_different_ranks_raises_as_torch():
    a, b = torch.randn(2, 3), torch.randn(2, 2, 3)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        tf.vmap(torch.linalg.cross)(a, b)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        vmap(ember.linalg.cross)(ember.tensor(a.numpy()), ember.tensor(b.numpy()))


def test_inplace_scatter_on_an_unbatched_self_raises_as_torch():
    idx = torch.tensor([[0], [1], [2]])
    src = torch.randn(3, 1)
    with pytest.raises(RuntimeError):
        tf.vmap(lambda i, s: torch.zeros(4).scatter_(0, i, s))(idx, src)
    with pytest.raises(RuntimeError):
        vmap(lambda i, s: ember.zeros(4).scatter_(0, i, s))(ember.tensor(idx.numpy()),
                                                             ember.tensor(src.numpy()))


def test_inplace_index_put_on_a_batched_self():
    x = np.random.default_rng(7).standard_normal((B, 4, 2))
    v = np.random.default_rng(8).standard_normal((B, 2))

    def f(lib, xs, vs):
        y = xs.clone()
        y.index_put_((lib.tensor([1, 3]),), vs, accumulate=True)
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out_e = vmap(lambda a, b: f(ember, a, b))(ember.tensor(x), ember.tensor(v))
    out_t = tf.vmap(lambda a, b: f(torch, a, b))(torch.tensor(x), torch.tensor(v))
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=0, atol=0)


@pytest.mark.parametrize("f", [lambda x: x.sum((0, -1)), lambda x: x.split(1, 0),
                               lambda x: x.softmax(1)], ids=["repeated_dim", "split", "dim_1"])
# torch's vmap raises IndexError for these (its eager call raises RuntimeError for the first two)
def test_dims_of_0d_examples_raise_as_torch(f):
    kind = None
    try:
        tf.vmap(f)(torch.randn(3))
    except Exception as exc:  # noqa: BLE001 - the type torch raises is the expectation
        kind = type(exc)
    assert kind is not None
    with pytest.raises(kind):
        vmap(f)(ember.randn(3))
