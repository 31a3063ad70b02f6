"""Oracle tests against torch: multilabel_margin_loss, triplet_margin_with_distance_loss,
gumbel_softmax, rrelu_ and AdaptiveLogSoftmaxWithLoss (values, gradients, errors)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.nn._oracle import close, to_ember

REDUCTIONS = ["mean", "sum", "none"]
DTYPES = [torch.float32, torch.float64]


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=1, dtype=torch.float32):
    return torch.randn(tuple(shape), generator=_g(seed), dtype=dtype)


def _tol(dtype):
    return 1e-5 if dtype == torch.float32 else 1e-10


def _noncontig(t):
    """A non-contiguous tensor equal to ``t`` (transposed storage)."""
    return t.detach().t().contiguous().t() if t.dim() == 2 else t.detach()[::1]


def _compare(t_fn, e_fn, t_args, grad_args, tol, seed=7):
    """Evaluate both functions on the same inputs; compare value and input gradients under a
    random cotangent."""
    t_in = [a.detach().clone().requires_grad_(i in grad_args) if isinstance(a, torch.Tensor)
            else a for i, a in enumerate(t_args)]
    e_in = [to_ember(a, i in grad_args) if isinstance(a, torch.Tensor) else a
            for i, a in enumerate(t_args)]
    t_out, e_out = t_fn(*t_in), e_fn(*e_in)
    close(e_out, t_out, tol, tol, "value")
    assert e_out.dtype == getattr(ember, str(t_out.dtype).split(".")[1])
    g = torch.randn(t_out.shape, generator=_g(seed), dtype=t_out.dtype)
    (t_out * g).sum().backward()
    (e_out * to_ember(g)).sum().backward()
    for i in grad_args:
        close(e_in[i].grad, t_in[i].grad, tol, tol, f"grad {i}")


def _raises(t_call, e_call, gist):
    with pytest.raises(Exception) as te:
        t_call()
    with pytest.raises(type(te.value), match=gist):
        e_call()


# -- multilabel_margin_loss -------------------------------------------------------------------
MLM_TARGET = torch.tensor([[3, 0, -1, 1, 2], [0, 1, 2, 3, 4], [1, 1, -1, 2, 0],
                           [-1, 2, 3, 0, 0], [4, 2, 2, -1, -1]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("noncontig", [False, True])
def test_multilabel_margin_loss(reduction, dtype, noncontig):
    x = _randn(5, 5, dtype=dtype)
    x[0, 1] = x[0, 3] + 1.0  # a hinge exactly at its kink: torch gives no gradient there
    if noncontig:
        x = _noncontig(x)
        assert not x.is_contiguous()
    _compare(lambda a, t: TF.multilabel_margin_loss(a, t, reduction=reduction),
             lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction),
             [x, MLM_TARGET], (0,), _tol(dtype))
    _compare(lambda a, t: torch.nn.MultiLabelMarginLoss(reduction=reduction)(a, t),
             lambda a, t: nn.MultiLabelMarginLoss(reduction=reduction)(a, t),
             [x, MLM_TARGET], (0,), _tol(dtype))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_unbatched_and_edges(reduction):
    def both(x, t):
        _compare(lambda a, b: TF.multilabel_margin_loss(a, b, reduction=reduction),
                 lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction),
                 [x, t], (0,), 1e-5)

    both(_randn(4), torch.tensor([1, 2, -1, 0]))          # 1-d: a 0-d loss
    both(torch.tensor(0.5), torch.tensor(0))              # 0-d: one class, no non-target
    both(_randn(2, 3), torch.full((2, 3), -1))            # no targets at all: zero loss
    both(_randn(2, 3), torch.tensor([[0, 1, 2], [2, 2, 2]]))  # all classes / repeated target
    if reduction == "none":  # torch reduces an empty batch from uninitialised memory
        both(torch.zeros(0, 4), torch.zeros(0, 4, dtype=torch.long))


def test_multilabel_margin_loss_errors():
    x = _randn(3, 4)
    cases = [
        (x, torch.zeros(3, 3, dtype=torch.long), "inconsistent target size"),
        (x, torch.full((3, 4), 4), "out of range"),
        (x, torch.full((3, 4), -2), "out of range"),
        (x[:1], torch.tensor([[0, -1, 5, 0]]), "out of range"),  # checked past the -1 too
        (_randn(2, 2, 2), torch.zeros(2, 2, 2, dtype=torch.long), "non-empty vector or matrix"),
        (_randn(3, 0), torch.zeros(3, 0, dtype=torch.long), "non-empty vector or matrix"),
        (x, torch.zeros(3, 4), "expected scalar type Long"),
    ]
    for a, t, gist in cases:
        _raises(lambda a=a, t=t: TF.multilabel_margin_loss(a, t),
                lambda a=a, t=t: F.multilabel_margin_loss(to_ember(a), to_ember(t)), gist)
    _raises(lambda: TF.multilabel_margin_loss(x, torch.zeros(3, 4, dtype=torch.long),
                                              reduction="avg"),
            lambda: F.multilabel_margin_loss(to_ember(x), ember.zeros(3, 4, dtype=ember.int64),
                                             reduction="avg"), "not a valid value")


def test_multilabel_margin_loss_legacy_reduction():
    x, t = _randn(5, 5), MLM_TARGET
    with pytest.warns(UserWarning):
        e = F.multilabel_margin_loss(to_ember(x), to_ember(t), size_average=False)
    with pytest.warns(UserWarning):
        tv = TF.multilabel_margin_loss(x, t, size_average=False)
    close(e, tv)


# -- triplet_margin_with_distance_loss --------------------------------------------------------
def _cos_dist(lib):
    return lambda a, b: 1.0 - lib.nn.functional.cosine_similarity(a, b)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("dist", ["default", "l1", "cosine"])
def test_triplet_margin_with_distance_loss(reduction, dtype, swap, dist):
    a, p, n = (_randn(6, 4, seed=s, dtype=dtype) for s in (1, 2, 3))
    n = _noncontig(n)
    fns = {"default": (None, None),
           "l1": (lambda x, y: (x - y).abs().sum(-1), lambda x, y: (x - y).abs().sum(-1)),
           "cosine": (_cos_dist(torch), _cos_dist(ember))}
    tdf, edf = fns[dist]
    kw = {"margin": 0.7, "swap": swap, "reduction": reduction}
    _compare(lambda *t: TF.triplet_margin_with_distance_loss(*t, distance_function=tdf, **kw),
             lambda *t: F.triplet_margin_with_distance_loss(*t, distance_function=edf, **kw),
             [a, p, n], (0, 1, 2), _tol(dtype))
    _compare(lambda *t: torch.nn.TripletMarginWithDistanceLoss(distance_function=tdf, **kw)(*t),
             lambda *t: nn.TripletMarginWithDistanceLoss(distance_function=edf, **kw)(*t),
             [a, p, n], (0, 1, 2), _tol(dtype))


def test_triplet_margin_with_distance_loss_unbatched_and_module_distance():
    a, p, n = (_randn(4, seed=s) for s in (1, 2, 3))
    _compare(lambda *t: TF.triplet_margin_with_distance_loss(*t, reduction="none"),
             lambda *t: F.triplet_margin_with_distance_loss(*t, reduction="none"),
             [a, p, n], (0, 1, 2), 1e-5)
    a, p, n = (_randn(5, 3, seed=s) for s in (4, 5, 6))
    kw = {"swap": True, "margin": 2.0}
    _compare(lambda *t: torch.nn.TripletMarginWithDistanceLoss(
                 distance_function=torch.nn.PairwiseDistance(p=1.0), **kw)(*t),
             lambda *t: nn.TripletMarginWithDistanceLoss(
                 distance_function=nn.PairwiseDistance(p=1.0), **kw)(*t),
             [a, p, n], (0, 1, 2), 1e-5)
    m = nn.TripletMarginWithDistanceLoss()
    assert isinstance(m.distance_function, nn.PairwiseDistance)
    assert repr(m) == repr(torch.nn.TripletMarginWithDistanceLoss())


def test_triplet_margin_with_distance_loss_errors():
    a = _randn(3, 4)
    ea = to_ember(a)
    _raises(lambda: TF.triplet_margin_with_distance_loss(a, a, a, margin=0.0),
            lambda: F.triplet_margin_with_distance_loss(ea, ea, ea, margin=0.0),
            "margin must be greater than 0")
    _raises(lambda: TF.triplet_margin_with_distance_loss(a, a, a, reduction="x"),
            lambda: F.triplet_margin_with_distance_loss(ea, ea, ea, reduction="x"),
            "not a valid value for reduction")
    _raises(lambda: TF.triplet_margin_with_distance_loss(a, a, a[0]),
            lambda: F.triplet_margin_with_distance_loss(ea, ea, ea[0]),
            "same number of dimensions")
    _raises(lambda: torch.nn.TripletMarginWithDistanceLoss(margin=-1.0),
            lambda: nn.TripletMarginWithDistanceLoss(margin=-1.0),
            "expected margin to be greater than 0")
    with pytest.raises(TypeError):
        nn.TripletMarginWithDistanceLoss(None)  # keyword-only, as in torch


# -- gumbel_softmax ---------------------------------------------------------------------------
@pytest.fixture
def fixed_noise(monkeypatch):
    """Make ``exponential_`` in both libraries fill with the same fixed draws."""
    state = {}

    def set_noise(e):
        state["e"] = e

    def t_exp(self, *args, **kwargs):
        return self.copy_(state["e"].to(self.dtype))

    def e_exp(self, *args, **kwargs):
        return self.copy_(to_ember(state["e"]).to(self.dtype))

    monkeypatch.setattr(torch.Tensor, "exponential_", t_exp)
    monkeypatch.setattr(ember.Tensor, "exponential_", e_exp)
    return set_noise


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("tau", [1.0, 0.3])
def test_gumbel_softmax_fixed_noise(fixed_noise, dtype, hard, dim, tau):
    logits = _noncontig(_randn(4, 5, dtype=dtype))
    noise = torch.from_numpy(np.random.default_rng(3).exponential(size=(4, 5)))
    fixed_noise(noise)
    _compare(lambda x: TF.gumbel_softmax(x, tau=tau, hard=hard, dim=dim),
             lambda x: F.gumbel_softmax(x, tau=tau, hard=hard, dim=dim),
             [logits], (0,), _tol(dtype))


def test_gumbel_softmax_straight_through_identity():
    ember.manual_seed(0)
    x = ember.tensor(_randn(3, 6).numpy(), requires_grad=True)
    ember.manual_seed(5)
    y = F.gumbel_softmax(x, tau=0.5, hard=True)
    ember.manual_seed(5)
    soft = F.gumbel_softmax(x, tau=0.5, hard=False)
    yn = y.detach().numpy()
    assert set(np.unique(yn)) <= {0.0, 1.0}
    np.testing.assert_array_equal(yn.sum(-1), np.ones(3))
    np.testing.assert_array_equal(yn.argmax(-1), soft.detach().numpy().argmax(-1))
    g = ember.tensor(_randn(3, 6, seed=9).numpy())
    gh = ember.autograd.grad((y * g).sum(), x)[0]
    gs = ember.autograd.grad((soft * g).sum(), x)[0]
    close(gh, gs, 1e-6, 1e-6, "straight-through gradient")


def test_gumbel_softmax_statistics():
    # one-hot frequencies match softmax(logits) in both libraries
    logits = torch.tensor([1.0, 0.0, -1.0, 0.5])
    n = 20000
    ember.manual_seed(1)
    torch.manual_seed(1)
    e = F.gumbel_softmax(to_ember(logits).expand(n, 4), hard=True).numpy().mean(0)
    t = TF.gumbel_softmax(logits.expand(n, 4), hard=True).numpy().mean(0)
    p = torch.softmax(logits, 0).numpy()
    np.testing.assert_allclose(e, p, atol=0.015)
    np.testing.assert_allclose(t, p, atol=0.015)
    soft = F.gumbel_softmax(to_ember(logits).expand(n, 4), tau=2.0).numpy()
    np.testing.assert_allclose(soft.sum(-1), np.ones(n), rtol=1e-5)
    tsoft = TF.gumbel_softmax(logits.expand(n, 4), tau=2.0).numpy()
    np.testing.assert_allclose(soft.mean(0), tsoft.mean(0), atol=0.01)


def test_gumbel_softmax_eps_warning_and_dtype():
    with pytest.warns(UserWarning, match="deprecated"):
        F.gumbel_softmax(ember.zeros(2, 3), eps=1e-5)
    y = F.gumbel_softmax(ember.zeros(2, 3, dtype=ember.float64), hard=True)
    assert y.dtype == ember.float64


# -- rrelu_ -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_rrelu_inplace_eval(dtype):
    x = _randn(4, 5, dtype=dtype)
    ex = to_ember(x)
    out = F.rrelu_(ex, 0.1, 0.4)
    assert out is ex
    close(ex, TF.rrelu_(x.clone(), 0.1, 0.4), _tol(dtype), _tol(dtype))
    # gradient through the in-place op on a non-leaf
    _compare(lambda a: TF.rrelu_(a * 1.0, 0.1, 0.4), lambda a: F.rrelu_(a * 1.0, 0.1, 0.4),
             [_noncontig(x)], (0,), _tol(dtype))


def test_rrelu_inplace_training():
    ember.manual_seed(0)
    x = ember.tensor(_randn(50, 40).numpy(), requires_grad=True)
    h = x * 1.0
    y = F.rrelu_(h, 0.1, 0.3, training=True)
    assert y is h
    xn, yn = x.detach().numpy(), y.detach().numpy()
    np.testing.assert_array_equal(yn[xn >= 0], xn[xn >= 0])
    slope = yn[xn < 0] / xn[xn < 0]
    assert slope.min() >= 0.1 - 1e-6 and slope.max() <= 0.3 + 1e-6
    assert abs(slope.mean() - 0.2) < 0.01
    y.sum().backward()
    gn = x.grad.numpy()
    np.testing.assert_allclose(gn[xn < 0], slope, rtol=1e-5)
    np.testing.assert_array_equal(gn[xn > 0], 1.0)


# -- AdaptiveLogSoftmaxWithLoss ---------------------------------------------------------------
def _asm_pair(in_f, n_cls, cutoffs, dtype=torch.float32, **kw):
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(in_f, n_cls, cutoffs, **kw).to(dtype)
    em = nn.AdaptiveLogSoftmaxWithLoss(in_f, n_cls, cutoffs, **kw,
                                       dtype=getattr(ember, str(dtype)[6:]))
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    assert repr(em) == repr(tm)
    return tm, em


def _param_grads_close(tm, em, tol):
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        if tp[name].grad is None:
            assert p.grad is None, name
        else:
            close(p.grad, tp[name].grad, tol, tol, f"grad of {name}")


@pytest.mark.filterwarnings("ignore:Initializing zero-element")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("head_bias", [False, True])
@pytest.mark.parametrize("cfg", [(16, 20, [5, 12], 2.0), (8, 10, [4, 7], 4.0), (6, 5, [2], 1.5)])
def test_adaptive_log_softmax_forward_backward(dtype, head_bias, cfg):
    in_f, n_cls, cutoffs, div = cfg
    tm, em = _asm_pair(in_f, n_cls, cutoffs, dtype, div_value=div, head_bias=head_bias)
    x = _noncontig(_randn(in_f, 9, dtype=dtype).t())
    target = torch.randint(0, n_cls, (9,), generator=_g(4))
    target[:3] = torch.tensor([0, n_cls - 1, cutoffs[0]])
    tx, ex = x.clone().requires_grad_(True), to_ember(x, True)
    t_out, e_out = tm(tx, target), em(ex, to_ember(target))
    assert type(e_out).__name__ == "_ASMoutput" and e_out._fields == ("output", "loss")
    tol = _tol(dtype)
    close(e_out.output, t_out.output, tol, tol, "output")
    close(e_out.loss, t_out.loss, tol, tol, "loss")
    g = _randn(9, seed=8, dtype=dtype)
    ((t_out.output * g).sum() + t_out.loss).backward()
    ((e_out.output * to_ember(g)).sum() + e_out.loss).backward()
    close(ex.grad, tx.grad, tol, tol, "input grad")
    _param_grads_close(tm, em, tol)

    close(em.log_prob(to_ember(x)), tm.log_prob(x), tol, tol, "log_prob")
    close(em.predict(to_ember(x)), tm.predict(x), msg="predict")


@pytest.mark.filterwarnings("ignore:Initializing zero-element")
def test_adaptive_log_softmax_unbatched_and_single_cluster_batches():
    tm, em = _asm_pair(8, 10, [4, 7])
    x = _randn(8)
    for t in (2, 5, 9):
        tx, ex = x.clone().requires_grad_(True), to_ember(x, True)
        to, eo = tm(tx, torch.tensor(t)), em(ex, ember.tensor(t))
        close(eo.output, to.output, msg="output")
        close(eo.loss, to.loss, msg="loss")
        to.loss.backward()
        eo.loss.backward()
        close(ex.grad, tx.grad, msg="grad")
    # every row in one tail cluster (the shortlist and the other cluster unused)
    xb = _randn(3, 8, seed=3)
    tb = torch.tensor([8, 9, 7])
    close(em(to_ember(xb), to_ember(tb)).output, tm(xb, tb).output, msg="tail only")


@pytest.mark.filterwarnings("ignore:Initializing zero-element")
def test_adaptive_log_softmax_predict_branches():
    tm, em = _asm_pair(4, 10, [3, 6])
    with torch.no_grad():
        tm.head.weight.copy_(torch.tensor([[3.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0],
                                           [0, 3.0, 0, 0], [0, 0, 3.0, 0]]))
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    eye = torch.eye(4)
    for x in (eye[[0, 0]], eye[[1, 2]], eye[[0, 1, 2, 3]], eye[[1]]):  # all / none / mixed
        close(em.predict(to_ember(x)), tm.predict(x), msg=str(x))
    lp = em.log_prob(to_ember(eye))
    np.testing.assert_allclose(lp.exp().sum(1).detach().numpy(), np.ones(4), rtol=1e-5)


@pytest.mark.filterwarnings("ignore:Initializing zero-element")
def test_adaptive_log_softmax_errors():
    for cutoffs in ([], [5, 3], [0, 4], [4, 10], [3, 3], [2.5]):
        _raises(lambda c=cutoffs: torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, c),
                lambda c=cutoffs: nn.AdaptiveLogSoftmaxWithLoss(8, 10, c), "cutoffs should be")
    tm, em = _asm_pair(8, 10, [4, 7])
    cases = [
        (_randn(3, 8), torch.tensor([0, 1]), "same size in the batch dimension"),
        (_randn(3, 8, 1), torch.tensor([0, 1, 2]), "1D target tensor expects 2D input"),
        (_randn(3, 8), torch.tensor(1), "0D target tensor expects 1D input"),
        (_randn(3, 8), torch.zeros(3, 1, dtype=torch.long), "multi-target not supported"),
        (_randn(3, 8), torch.tensor([0, 10, 2]), r"Target values should be in \[0, 9\]"),
        (_randn(3, 8), torch.tensor([0, -1, 2]), r"Target values should be in \[0, 9\]"),
    ]
    for x, t, gist in cases:
        _raises(lambda x=x, t=t: tm(x, t), lambda x=x, t=t: em(to_ember(x), to_ember(t)), gist)
