"""ember.func.vmap against torch.func.vmap and against a Python loop: values, gradients, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.nn.functional as F
from ember.func import vmap

TF = torch.nn.functional


def _fn(lib):
    return F if lib is ember else TF


# (id, f(lib, *xs), shapes of the batched inputs (batch first), in_dims, extra kwargs)
CASES = [
    ("add", lambda lib, a, b: a + b, [(4, 3, 5), (4, 5)], 0),
    ("mul_unbatched", lambda lib, a, b: a * b, [(4, 3, 5), (3, 5)], (0, None)),
    ("where", lambda lib, a, b: lib.where(a > 0, a, b), [(4, 3), (4, 3)], 0),
    ("exp_tanh", lambda lib, a: a.exp().tanh(), [(4, 3, 2)], 0),
    ("sum_dim", lambda lib, a: a.sum(1), [(4, 3, 5)], 0),
    ("sum_all", lambda lib, a: a.sum(), [(4, 3, 5)], 0),
    ("mean_keepdim", lambda lib, a: a.mean(-1, keepdim=True), [(4, 3, 5)], 0),
    ("amax", lambda lib, a: a.amax(0), [(4, 3, 5)], 0),
    ("max_dim", lambda lib, a: a.max(1)[0], [(4, 3, 5)], 0),
    ("softmax", lambda lib, a: a.softmax(-1), [(4, 3, 5)], 0),
    ("log_softmax", lambda lib, a: a.log_softmax(0), [(4, 3, 5)], 0),
    ("var", lambda lib, a: a.var(1), [(4, 3, 5)], 0),
    ("view", lambda lib, a: a.view(15) * 2, [(4, 3, 5)], 0),
    ("reshape_T", lambda lib, a: a.reshape(5, 3).t(), [(4, 3, 5)], 0),
    ("transpose", lambda lib, a: a.transpose(0, 1), [(4, 3, 5)], 0),
    ("permute", lambda lib, a: a.permute(2, 0, 1), [(4, 3, 5, 2)], 0),
    ("unsqueeze_squeeze", lambda lib, a: a.unsqueeze(1).squeeze(1).unsqueeze(-1), [(4, 3, 5)], 0),
    ("expand", lambda lib, a: a.expand(2, 3, 5), [(4, 3, 1)], 0),
    ("select_slice", lambda lib, a: a[1] * a[:, 1:3].sum(), [(4, 3, 5)], 0),
    ("flatten", lambda lib, a: a.flatten(), [(4, 3, 5)], 0),
    ("cat", lambda lib, a, b: lib.cat([a, b], 0), [(4, 3, 5), (4, 2, 5)], 0),
    ("stack_mixed", lambda lib, a, b: lib.stack([a, b], 1), [(4, 3, 5), (3, 5)], (0, None)),
    ("matmul_vec_mat", lambda lib, a, b: a @ b, [(4, 3), (3, 5)], (0, None)),
    ("matmul_mat_vec", lambda lib, a, b: a @ b, [(4, 2, 3), (4, 3)], 0),
    ("mm_both", lambda lib, a, b: a.mm(b), [(4, 2, 3), (4, 3, 5)], 0),
    ("mm_right", lambda lib, a, b: a.mm(b), [(2, 3), (4, 3, 5)], (None, 0)),
    ("dot", lambda lib, a, b: a.dot(b), [(4, 3), (4, 3)], 0),
    ("linear", lambda lib, x, w, b: _fn(lib).linear(x, w, b), [(4, 6), (4, 3, 6), (3,)],
     (0, 0, None)),
    ("conv2d_input", lambda lib, x, w: _fn(lib).conv2d(x, w, padding=1),
     [(3, 2, 5, 5), (4, 2, 3, 3)], (0, None)),
    ("conv2d_weight", lambda lib, x, w: _fn(lib).conv2d(x, w),
     [(1, 2, 5, 5), (3, 4, 2, 3, 3)], (None, 0)),
    ("layer_norm", lambda lib, x: _fn(lib).layer_norm(x, (5,)), [(4, 3, 5)], 0),
    ("gelu_relu", lambda lib, x: _fn(lib).gelu(_fn(lib).relu(x)), [(4, 3, 5)], 0),
    ("mse_loss", lambda lib, x, y: _fn(lib).mse_loss(x, y), [(4, 5), (4, 5)], 0),
    ("adv_index", lambda lib, a: a[lib.tensor([2, 0, 2])] * 2, [(4, 3, 5)], 0),
    ("adv_index_dim1", lambda lib, a: a[:, lib.tensor([1, 4])], [(4, 3, 5)], 0),
    ("index_select", lambda lib, a: a.index_select(1, lib.tensor([0, 3, 3])), [(4, 3, 5)], 0),
    ("gather", lambda lib, a: a.gather(1, lib.tensor([[0, 4], [1, 1], [2, 3]])), [(4, 3, 5)],
     0),
    ("embedding", lambda lib, w: _fn(lib).embedding(lib.tensor([[1, 0], [2, 2]]), w),
     [(4, 3, 5)], 0),
    ("cross_entropy", lambda lib, x: _fn(lib).cross_entropy(x, lib.tensor([1, 0, 4])),
     [(4, 3, 5)], 0),
    ("in_dim_1", lambda lib, a: a * 2, [(3, 4, 5)], 1),
    ("in_dim_neg", lambda lib, a: a.sum(0), [(3, 5, 4)], -1),
]


def _inputs(shapes, in_dims, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(shapes)
    out = []
    for a, d in zip(arrays, dims):
        if d is not None and d != 0:  # the case's shapes are batch-first: move it
            a = np.ascontiguousarray(np.moveaxis(a, 0, d))
        out.append(a)
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_vmap_matches_torch_and_a_loop(case):
    _, f, shapes, in_dims = case
    arrays = _inputs(shapes, in_dims)
    xe = [ember.tensor(a, requires_grad=True) for a in arrays]
    xt = [torch.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every case has a batching rule or a decomposition
        out_e = vmap(lambda *a: f(ember, *a), in_dims=in_dims)(*xe)
    out_t = tf.vmap(lambda *a: f(torch, *a), in_dims=in_dims)(*xt)
    assert tuple(out_e.shape) == tuple(out_t.shape)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    # the loop over the batch, in ember
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(xe)
    size = next(x.shape[d] for x, d in zip(xe, dims) if d is not None)
    loop = ember.stack([f(ember, *[x if d is None else x.select(d, i) for x, d in zip(xe, dims)])
                        for i in range(size)])
    np.testing.assert_allclose(out_e.detach().numpy(), loop.detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    # gradients with a random cotangent
    g = np.random.default_rng(1).standard_normal(tuple(out_t.shape)).astype(np.float32)
    (out_e * ember.tensor(g)).sum().backward()
    (out_t * torch.tensor(g)).sum().backward()
    for a, b in zip(xe, xt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_non_contiguous_input_and_out_dims():
    a = np.random.default_rng(2).standard_normal((5, 4, 3)).astype(np.float32)
    xe, xt = ember.tensor(a).permute(2, 0, 1), torch.tensor(a).permute(2, 0, 1)
    out_e = vmap(lambda r: r.sum(0) * r[0], in_dims=1, out_dims=1)(xe)
    out_t = tf.vmap(lambda r: r.sum(0) * r[0], in_dims=1, out_dims=1)(xt)
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-5, atol=1e-6)


def test_nested_vmap_and_tuple_outputs():
    a = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    b = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)

    def f(lib, x, y):
        return (x * y).sum(), x - y

    out_e = vmap(vmap(lambda x, y: f(ember, x, y), in_dims=(0, 0)), in_dims=(0, None))(
        ember.tensor(a), ember.tensor(b))
    out_t = tf.vmap(tf.vmap(lambda x, y: f(torch, x, y), in_dims=(0, 0)), in_dims=(0, None))(
        torch.tensor(a), torch.tensor(b))
    for e, t in zip(out_e, out_t):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_chunk_size_equals_whole_batch():
    x = ember.randn(7, 3)
    full = vmap(lambda r: r.softmax(0))(x)
    chunked = vmap(lambda r: r.softmax(0), chunk_size=3)(x)
    np.testing.assert_array_equal(full.numpy(), chunked.numpy())


def test_unbatched_output_is_expanded():
    out = vmap(lambda r: ember.ones(2), in_dims=0)(ember.zeros(3, 4))
    assert tuple(out.shape) == (3, 2)


def test_fallback_loops_with_a_performance_warning():
    x = np.random.default_rng(5).standard_normal((3, 4, 4)).astype(np.float32)
    with pytest.warns(UserWarning, match="performance drop.*batching rule for aten::"):
        out = vmap(lambda m: m.histc(4, -2, 2))(ember.tensor(x))
    np.testing.assert_allclose(out.numpy(), tf.vmap(lambda m: m.histc(4, -2, 2))(
        torch.tensor(x)).numpy(),
                               rtol=1e-4)


def _torch_error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.type


@pytest.mark.parametrize("in_dims,msg", [
    ((0, 0), "same size in the mapped dimension"),
    ((0,), "in_dims is not compatible with the structure of `inputs`"),
    ([0, 0], "expected `in_dims` to be int or a"),
    ((2, 0), "expected in_dim to satisfy -2 <= in_dim < 2"),
    ((None, None), "at least one Tensor to vmap over"),
])
def test_in_dims_errors_as_torch(in_dims, msg):
    xe, ye = ember.randn(3, 4), ember.randn(4, 4)
    xt, yt = torch.randn(3, 4), torch.randn(4, 4)
    kind = _torch_error(lambda: tf.vmap(torch.add, in_dims=in_dims)(xt, yt))
    with pytest.raises(kind, match=msg.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        vmap(ember.add, in_dims=in_dims)(xe, ye)


def test_non_tensor_input_with_in_dim_errors():
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a, n: a * n, in_dims=(0, 0))(ember.randn(3), 3)


def test_data_dependent_control_flow_errors():
    def f(a):
        return a if a.sum() > 0 else -a

    kind = _torch_error(lambda: tf.vmap(f)(torch.randn(3, 4)))
    with pytest.raises(kind, match="data-dependent control flow"):
        vmap(f)(ember.randn(3, 4))
    with pytest.raises(RuntimeError, match=r"calling \.item\(\)"):
        vmap(lambda a: a.sum().item())(ember.randn(3, 4))


def test_randomness_modes():
    x = ember.zeros(4, 3)
    for f in (lambda a: a + ember.randn(3), lambda a: ember.rand_like(a)):
        kind = _torch_error(lambda: tf.vmap(lambda a: a + torch.randn(3))(torch.zeros(4, 3)))
        with pytest.raises(kind, match="randomness error mode"):
            vmap(f)(x)
        same = vmap(f, randomness="same")(x)
        assert (same == same[0]).all()
        different = vmap(f, randomness="different")(x)
        assert not (different == different[0]).all()
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda a: a, randomness="bad")
    ember.manual_seed(0)
    d = vmap(lambda a: F.dropout(a, 0.5), randomness="different")(ember.ones(8, 100))
    assert not (d == d[0]).all()


def test_output_errors():
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda a: 3)(ember.zeros(2))
    with pytest.raises(ValueError, match="out_dims is not compatible"):
        vmap(lambda a: a, out_dims=(0, 0))(ember.zeros(2))
    with pytest.raises(RuntimeError, match="dynamic shape"):
        vmap(lambda a: a.nonzero())(ember.ones(2, 3))


def test_batched_indices():
    a = np.random.default_rng(6).standard_normal((4, 5, 3)).astype(np.float32)
    idx = np.random.default_rng(7).integers(0, 5, (4, 2))
    for f in (lambda x, i: x[i], lambda x, i: x.index_select(0, i) * 1.0,
              lambda x, i: x.gather(0, i.unsqueeze(-1).expand(2, 3))):
        out_e = vmap(f)(ember.tensor(a), ember.tensor(idx))
        out_t = tf.vmap(f)(torch.tensor(a), torch.tensor(idx))
        np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-6)
