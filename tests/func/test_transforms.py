"""grad, vjp, jvp, jacrev, jacfwd, hessian, forward AD, functional_call and per-sample
gradients against torch.func on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfwAD
import torch.func as tf

import ember
import ember.autograd.forward_ad as fwAD
import ember.nn.functional as F
from ember.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    stack_module_state,
    vjp,
    vmap,
)

TF = torch.nn.functional


def _arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(e, t, rtol=1e-4, atol=1e-5):
    if isinstance(t, tuple | list):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _close(a, b, rtol, atol)
        return
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def _f(lib, x, y):
    return ((x.sin() * y).sum(-1) ** 2).mean() + (x * x).sum()


def _g(lib, x):  # vector -> vector
    return (x.exp() * x.sum()).tanh()


def test_grad_and_value_with_argnums_and_aux():
    a, b = _arr(3, 4), _arr(3, 4, seed=1)
    for argnums in (0, 1, (0, 1)):
        ge, ve = grad_and_value(lambda x, y: _f(ember, x, y), argnums)(ember.tensor(a),
                                                                        ember.tensor(b))
        gt, vt = tf.grad_and_value(lambda x, y: _f(torch, x, y), argnums)(torch.tensor(a),
                                                                         torch.tensor(b))
        _close(ge, gt)
        _close(ve, vt)
    ge, aux = grad(lambda x: ((x * x).sum(), x.mean()), has_aux=True)(ember.tensor(a))
    np.testing.assert_allclose(ge.numpy(), 2 * a, rtol=1e-6)
    np.testing.assert_allclose(aux.numpy(), a.mean(), rtol=1e-5)


def test_grad_errors_as_torch():
    x = ember.randn(2, 3)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, "
                                           "got tensor with 2 dims"):
        grad(lambda a: a)(x)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor"):
        grad(lambda a: 3.0)(x)
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        grad(lambda a: a.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        grad(lambda a: a.sum(), argnums=1)(x)


def test_higher_order_grad():
    x = _arr(5)
    ge = grad(grad(lambda t: (t.sin() * t).sum().sin()))  # noqa: E731 (a scalar of a scalar)
    gt = tf.grad(tf.grad(lambda t: (t.sin() * t).sum().sin()))
    for i in range(3):
        _close(ge(ember.tensor(x[i])), gt(torch.tensor(x[i])))


def test_vjp_matches_torch():
    a = _arr(4)
    ct = _arr(4, seed=2)
    oe, fe = vjp(lambda x: _g(ember, x), ember.tensor(a))
    ot, ft = tf.vjp(lambda x: _g(torch, x), torch.tensor(a))
    _close(oe, ot)
    _close(fe(ember.tensor(ct)), ft(torch.tensor(ct)))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fe(ember.ones(3))


def test_jvp_jacfwd_jacrev_and_hessian_match_torch():
    a, t = _arr(4), _arr(4, seed=3)
    pe, te = jvp(lambda x: _g(ember, x), (ember.tensor(a),), (ember.tensor(t),))
    pt, tt = tf.jvp(lambda x: _g(torch, x), (torch.tensor(a),), (torch.tensor(t),))
    _close(pe, pt)
    _close(te, tt)
    jr = jacrev(lambda x: _g(ember, x))(ember.tensor(a))
    jf = jacfwd(lambda x: _g(ember, x))(ember.tensor(a))
    jt = tf.jacrev(lambda x: _g(torch, x))(torch.tensor(a))
    _close(jr, jt)
    _close(jf, jt)
    np.testing.assert_allclose((jr.numpy() @ t), te.numpy(), rtol=1e-4, atol=1e-5)
    b = _arr(3, seed=4)
    he = hessian(lambda x: (x.sin() * x.sum()).sum())(ember.tensor(b))
    ht = tf.hessian(lambda x: (x.sin() * x.sum()).sum())(torch.tensor(b))
    _close(he, ht)


def test_jacobians_of_several_inputs_and_outputs():
    a, b = _arr(2, 3), _arr(3, seed=5)

    def f(lib, x, y):
        return x @ y, (x * x).sum(0)

    for je, jt in ((jacrev(lambda x, y: f(ember, x, y), argnums=(0, 1)),
                    tf.jacrev(lambda x, y: f(torch, x, y), argnums=(0, 1))),
                   (jacfwd(lambda x, y: f(ember, x, y), argnums=(0, 1)),
                    tf.jacfwd(lambda x, y: f(torch, x, y), argnums=(0, 1)))):
        out_e = je(ember.tensor(a), ember.tensor(b))
        out_t = jt(torch.tensor(a), torch.tensor(b))
        for oe, ot in zip(out_e, out_t):
            _close(oe, ot)


def test_jvp_errors_as_torch():
    x = ember.ones(3)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(lambda a: a, x, (x,))
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(lambda a: a, (x,), (x, x))


@pytest.mark.parametrize("op", ["atan", "softplus", "log_softmax", "erf", "sigmoid", "matmul"])
def test_forward_ad_rules_match_torch(op):
    a, t, w = _arr(3, 4), _arr(3, 4, seed=6), _arr(4, 2, seed=7)
    fns = {"atan": lambda lib, x: x.atan(), "erf": lambda lib, x: x.erf(),
           "softplus": lambda lib, x: (F if lib is ember else TF).softplus(x),
           "log_softmax": lambda lib, x: x.log_softmax(-1),
           "sigmoid": lambda lib, x: x.sigmoid() * x,
           "matmul": lambda lib, x: x @ lib.tensor(w)}
    f = fns[op]
    with fwAD.dual_level():
        y = f(ember, fwAD.make_dual(ember.tensor(a), ember.tensor(t)))
        pe, te = fwAD.unpack_dual(y)
    with tfwAD.dual_level():
        y = f(torch, tfwAD.make_dual(torch.tensor(a), torch.tensor(t)))
        pt, tt = tfwAD.unpack_dual(y)
    _close(pe, pt)
    _close(te, tt)


def test_forward_ad_api_errors():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(ember.ones(2), ember.ones(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(ember.ones(2), ember.ones(3))
        x = ember.ones(2)
        assert fwAD.unpack_dual(x).tangent is None
        d = fwAD.make_dual(x, ember.full((2,), 2.0))
        assert fwAD.unpack_dual(d.detach()).tangent is None  # detach drops the tangent
    assert fwAD.unpack_dual(d).tangent is None  # outside the level


class _MLP(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ember.nn.Linear(6, 8)
        self.fc2 = ember.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class _CNN(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ember.nn.Conv2d(1, 2, 3)
        self.fc = ember.nn.Linear(2 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


def _torch_twin(model):
    """A torch module with the same structure and parameters as the ember model."""
    if isinstance(model, _MLP):
        tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
        names = {"fc1": "0", "fc2": "2"}
    else:
        tm = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(1),
                                 torch.nn.Linear(32, 3))
        names = {"conv": "0", "fc": "3"}
    with torch.no_grad():
        for n, p in model.named_parameters():
            mod, attr = n.split(".")
            getattr(tm, names[mod]).get_parameter(attr).copy_(torch.tensor(p.detach().numpy()))
    return tm, names


@pytest.mark.parametrize("model_cls,shape", [(_MLP, (5, 6)), (_CNN, (5, 1, 6, 6))])
def test_per_sample_gradients_match_torch(model_cls, shape):
    ember.manual_seed(0)
    model = model_cls()
    tm, names = _torch_twin(model)
    x, y = _arr(*shape, seed=8), np.array([0, 2, 1, 1, 0])
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tm.named_parameters()}

    def loss_e(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    def loss_t(p, xi, yi):
        out = tf.functional_call(tm, p, (xi.unsqueeze(0),))
        return TF.cross_entropy(out, yi.unsqueeze(0))

    ge = vmap(grad(loss_e), in_dims=(None, 0, 0))(params, ember.tensor(x), ember.tensor(y))
    gt = tf.vmap(tf.grad(loss_t), in_dims=(None, 0, 0))(tparams, torch.tensor(x),
                                                         torch.tensor(y))
    for n in params:
        mod, attr = n.split(".")
        _close(ge[n], gt[f"{names[mod]}.{attr}"])
    # and the loop of single-example backward passes
    for i in range(len(y)):
        model.zero_grad()
        loss_e({k: v for k, v in model.named_parameters()}, ember.tensor(x[i]),
               ember.tensor(y[i])).backward()
        for n, p in model.named_parameters():
            np.testing.assert_allclose(ge[n][i].numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_ensemble_with_stack_module_state():
    ember.manual_seed(1)
    models = [ember.nn.Linear(4, 2) for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert params["weight"].shape == (3, 2, 4) and params["weight"].requires_grad
    x = ember.randn(5, 4)

    def run(p, b, xx):
        return functional_call(models[0], (p, b), (xx,))

    out = vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    w = models[0].weight
    assert functional_call(models[0], {"weight": ember.zeros(2, 4)}, x).shape == (5, 2)
    assert models[0].weight is w  # restored
    with pytest.raises(RuntimeError, match="at least one model"):
        stack_module_state([])


def test_vmap_of_jacrev_and_of_jvp():
    a, t = _arr(3, 4), _arr(3, 4, seed=9)
    je = vmap(jacrev(lambda x: _g(ember, x)))(ember.tensor(a))
    jt = tf.vmap(tf.jacrev(lambda x: _g(torch, x)))(torch.tensor(a))
    _close(je, jt)
    ve = vmap(grad(lambda x: _g(ember, x).sum()))(ember.tensor(a))
    vt = tf.vmap(tf.grad(lambda x: _g(torch, x).sum()))(torch.tensor(a))
    _close(ve, vt)
    _ = t


@pytest.mark.parametrize("xshape", [(5, 4), (5, 3, 4), (5, 2, 3, 4)])
def test_per_sample_gradient_of_a_shared_weight(xshape):
    # NOTE [A weight shared by the batch]: one GEMM forward, per-example products backward
    x, w = _arr(*xshape, seed=10), _arr(4, 6, seed=11)
    ge = vmap(grad(lambda w_, x_: (x_ @ w_).tanh().sum()), in_dims=(None, 0))(
        ember.tensor(w), ember.tensor(x))
    gt = tf.vmap(tf.grad(lambda w_, x_: (x_ @ w_).tanh().sum()), in_dims=(None, 0))(
        torch.tensor(w), torch.tensor(x))
    _close(ge, gt)
    he = vmap(jacrev(grad(lambda w_, x_: (x_ @ w_).tanh().sum()), argnums=1),
              in_dims=(None, 0))(ember.tensor(w), ember.tensor(x))
    ht = tf.vmap(tf.jacrev(tf.grad(lambda w_, x_: (x_ @ w_).tanh().sum()), argnums=1),
                 in_dims=(None, 0))(torch.tensor(w), torch.tensor(x))
    _close(he, ht)


def test_jvp_and_jacfwd_inside_vmap():
    a, t = _arr(3, 4), _arr(3, 4, seed=12)
    pe, te = vmap(lambda x, v: jvp(lambda y: _g(ember, y), (x,), (v,)))(ember.tensor(a),
                                                                      ember.tensor(t))
    pt, tt = tf.vmap(lambda x, v: tf.jvp(lambda y: _g(torch, y), (x,), (v,)))(torch.tensor(a),
                                                                             torch.tensor(t))
    _close(pe, pt)
    _close(te, tt)
    je = vmap(jacfwd(lambda x: _g(ember, x)))(ember.tensor(a))
    jt = tf.vmap(tf.jacfwd(lambda x: _g(torch, x)))(torch.tensor(a))
    _close(je, jt)


@pytest.mark.parametrize("chunk_size", [0, -1])
def test_jacrev_refuses_a_chunk_size_below_one_as_torch(chunk_size):
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        jacrev(lambda x: x * x, chunk_size=chunk_size)
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        tf.jacrev(lambda x: x * x, chunk_size=chunk_size)(torch.ones(3))


@pytest.mark.parametrize("chunk_size", [None, 1, 2, 7])
def test_jacrev_with_a_chunk_size_equals_torchs(chunk_size):
    a = np.random.default_rng(3).standard_normal(5)
    jr = jacrev(lambda x: (x * x).cumsum(0).tanh(), chunk_size=chunk_size)(ember.tensor(a))
    jt = tf.jacrev(lambda x: (x * x).cumsum(0).tanh(), chunk_size=chunk_size)(torch.tensor(a))
    np.testing.assert_allclose(jr.numpy(), jt.numpy(), rtol=1e-12, atol=1e-12)
