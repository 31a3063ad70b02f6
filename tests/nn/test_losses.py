"""Oracle tests of every loss (all reductions) and of the functional helpers against torch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.nn._oracle import close, to_ember

REDUCTIONS = ["mean", "sum", "none"]


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=1, dtype=torch.float32):
    return torch.randn(tuple(shape), generator=_g(seed), dtype=dtype)


def _pair(name, t_args, kwargs, tol=1e-5, grad_args=(0,), ember_module=None):
    """Call torch.nn.<name> and ember.nn.<name> with the same arguments; compare value and the
    gradients of the arguments listed in ``grad_args``."""
    t_in = [a.detach().clone().requires_grad_(i in grad_args) if isinstance(a, torch.Tensor)
            else a for i, a in enumerate(t_args)]
    e_in = [to_ember(a, i in grad_args) if isinstance(a, torch.Tensor) else a
            for i, a in enumerate(t_args)]
    t_kw = {k: v for k, v in kwargs.items()}
    e_kw = {k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    tl = getattr(torch.nn, name)(**t_kw)(*t_in)
    el = getattr(nn, name)(**e_kw)(*e_in)
    close(el, tl, tol, tol, "loss")
    g = _randn(*tl.shape, seed=7)
    (tl * g).sum().backward()
    (el * to_ember(g)).sum().backward()
    for i in grad_args:
        close(e_in[i].grad, t_in[i].grad, tol, tol, f"grad {i}")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction):
    x, y = _randn(4, 5), _randn(4, 5, seed=2)
    y[0, 0] = x[0, 0]  # a zero difference (kink of l1)
    for name, kw in [("MSELoss", {}), ("L1Loss", {}), ("SmoothL1Loss", {}),
                     ("SmoothL1Loss", {"beta": 0.5}), ("SmoothL1Loss", {"beta": 0.0}),
                     ("HuberLoss", {}), ("HuberLoss", {"delta": 0.3})]:
        _pair(name, [x, y], {"reduction": reduction, **kw}, grad_args=(0, 1))
    _pair("SoftMarginLoss", [x, y.sign()], {"reduction": reduction})


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_indices(reduction, weighted, smoothing):
    x = _randn(6, 4)
    t = torch.tensor([0, 3, 1, -100, 2, 3])
    kw = {"reduction": reduction, "label_smoothing": smoothing}
    if weighted:
        kw["weight"] = torch.tensor([0.5, 1.0, 2.0, 0.1])
    _pair("CrossEntropyLoss", [x, t], kw)
    _pair("CrossEntropyLoss", [x, torch.tensor([0, 3, 1, 2, 2, 3])],
          {**kw, "ignore_index": 2})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_nd_and_unbatched(reduction):
    x, t = _randn(2, 3, 4, 2), torch.tensor([[[0, 1], [2, 2], [1, 0], [0, 0]],
                                             [[1, 1], [0, 2], [2, 1], [1, 0]]])
    _pair("CrossEntropyLoss", [x, t], {"reduction": reduction, "label_smoothing": 0.1})
    _pair("CrossEntropyLoss", [_randn(5), torch.tensor(3)], {"reduction": reduction})


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, smoothing):
    x = _randn(3, 5)
    p = torch.softmax(_randn(3, 5, seed=3), 1)
    _pair("CrossEntropyLoss", [x, p], {"reduction": reduction, "label_smoothing": smoothing,
                                       "weight": torch.rand(5, generator=_g(4))},
          grad_args=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    x = torch.log_softmax(_randn(5, 3), 1)
    t = torch.tensor([0, 2, 1, 1, 2])
    _pair("NLLLoss", [x, t], {"reduction": reduction})
    _pair("NLLLoss", [x, t], {"reduction": reduction, "ignore_index": 1,
                              "weight": torch.tensor([1.0, 2.0, 3.0])})
    x3 = torch.log_softmax(_randn(2, 3, 4), 1)
    _pair("NLLLoss", [x3, torch.tensor([[0, 1, 2, 0], [2, 2, 1, 0]])],
          {"reduction": reduction})


def test_nll_errors_like_torch():
    x = ember.randn(3, 4)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)"):
        F.nll_loss(x, ember.tensor([0, 1]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, ember.tensor([0, 1, 7]))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating"):
        F.cross_entropy(x, ember.rand(3, 4), ignore_index=1)
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_losses(reduction):
    p = torch.rand(4, 3, generator=_g(1)) * 0.98 + 0.01
    t = torch.rand(4, 3, generator=_g(2))
    w = torch.rand(3, generator=_g(3))
    _pair("BCELoss", [p, t], {"reduction": reduction}, grad_args=(0, 1))
    _pair("BCELoss", [p, t], {"reduction": reduction, "weight": w})
    x = _randn(4, 3) * 4
    _pair("BCEWithLogitsLoss", [x, t], {"reduction": reduction}, grad_args=(0, 1))
    _pair("BCEWithLogitsLoss", [x, t], {"reduction": reduction, "weight": w,
                                        "pos_weight": torch.tensor([0.5, 2.0, 3.0])},
          grad_args=(0, 1))
    _pair("MultiLabelSoftMarginLoss", [x, (t > 0.5).float()], {"reduction": reduction})


def test_bce_extremes_and_errors():
    p = torch.tensor([0.0, 1.0, 0.5])
    t = torch.tensor([1.0, 0.0, 1.0])
    close(F.binary_cross_entropy(to_ember(p), to_ember(t)), TF.binary_cross_entropy(p, t))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(ember.zeros(2), ember.zeros(3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = torch.log_softmax(_randn(3, 4), 1)
    t = torch.softmax(_randn(3, 4, seed=2), 1)
    t[0, 0] = 0.0
    if log_target:
        t = t.clamp_min(1e-6).log()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _pair("KLDivLoss", [x, t], {"reduction": reduction, "log_target": log_target},
              grad_args=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_losses(reduction):
    a, b = _randn(5), _randn(5, seed=2)
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0])
    _pair("MarginRankingLoss", [a, b, y], {"reduction": reduction, "margin": 0.3},
          grad_args=(0, 1))
    _pair("HingeEmbeddingLoss", [a, y], {"reduction": reduction, "margin": 0.5})
    x1, x2 = _randn(5, 3), _randn(5, 3, seed=3)
    _pair("CosineEmbeddingLoss", [x1, x2, y], {"reduction": reduction, "margin": 0.2},
          grad_args=(0, 1))
    n = _randn(5, 3, seed=4)
    for kw in ({}, {"swap": True, "p": 1.0, "margin": 0.5}):
        _pair("TripletMarginLoss", [x1, x2, n], {"reduction": reduction, **kw},
              grad_args=(0, 1, 2))
    _pair("MultiMarginLoss", [x1, torch.tensor([0, 2, 1, 1, 0])], {"reduction": reduction})
    _pair("MultiMarginLoss", [x1, torch.tensor([0, 2, 1, 1, 0])],
          {"reduction": reduction, "p": 2, "margin": 0.5,
           "weight": torch.tensor([1.0, 0.5, 2.0])})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_likelihood_losses(reduction):
    x = _randn(4, 3)
    t = torch.rand(4, 3, generator=_g(5)) * 4
    _pair("PoissonNLLLoss", [x, t], {"reduction": reduction})
    _pair("PoissonNLLLoss", [x.exp(), t], {"reduction": reduction, "log_input": False,
                                           "full": True})
    var = torch.rand(4, 3, generator=_g(6)) + 0.1
    _pair("GaussianNLLLoss", [x, t, var], {"reduction": reduction, "full": True},
          grad_args=(0, 2))


def test_legacy_size_average_reduce():
    x, y = _randn(3), _randn(3, seed=2)
    with pytest.warns(UserWarning):
        e = F.mse_loss(to_ember(x), to_ember(y), size_average=False)
    close(e, TF.mse_loss(x, y, reduction="sum"))


def test_loss_module_buffers_and_repr():
    w = ember.tensor([1.0, 2.0])
    loss = nn.CrossEntropyLoss(weight=w)
    assert loss.weight is w and "weight" in loss.state_dict()
    assert repr(loss) == "CrossEntropyLoss()"
    assert [n for n, _ in nn.BCEWithLogitsLoss(pos_weight=w).named_buffers()] == ["pos_weight"]


# -- functional helpers -----------------------------------------------------------------------
def test_one_hot():
    t = torch.tensor([[0, 2], [1, 4]])
    close(F.one_hot(to_ember(t)), TF.one_hot(t))
    close(F.one_hot(to_ember(t), 6), TF.one_hot(t, 6))
    assert F.one_hot(to_ember(t)).dtype == ember.int64
    with pytest.raises(RuntimeError, match="only applicable to index tensor"):
        F.one_hot(ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(ember.tensor([3]), 2)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
        F.one_hot(ember.tensor([], dtype=ember.int64))


def _fn_pair(tf, ef, args, tol=1e-5, **kw):
    t_in = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args]
    e_in = [to_ember(a, a.is_floating_point()) for a in args]
    to, eo = tf(*t_in, **kw), ef(*e_in, **kw)
    close(eo, to, tol, tol)
    g = _randn(*to.shape, seed=9)
    (to * g).sum().backward()
    (eo * to_ember(g)).sum().backward()
    for a, b in zip(e_in, t_in):
        if b.grad is None:
            assert a.grad is None
        else:
            close(a.grad, b.grad, tol, tol)


def test_distances_and_normalize():
    x1, x2 = _randn(4, 5), _randn(4, 5, seed=2)
    x1[0] = 0.0  # a zero vector: the eps clamps
    for kw in ({}, {"dim": 0}, {"eps": 0.5}):
        _fn_pair(TF.cosine_similarity, F.cosine_similarity, [x1, x2], **kw)
    _fn_pair(TF.cosine_similarity, F.cosine_similarity, [x1, _randn(1, 5, seed=3)])
    for kw in ({}, {"p": 1.0}, {"p": 3.0, "keepdim": True}, {"eps": 0.0}):
        _fn_pair(TF.pairwise_distance, F.pairwise_distance, [x1, x2], **kw)
    for kw in ({}, {"p": 1.0, "dim": 0}, {"eps": 10.0}):
        _fn_pair(TF.normalize, F.normalize, [x1], **kw)


def test_functional_misc():
    x = _randn(3, 4)
    _fn_pair(TF.linear, F.linear, [x, _randn(2, 4, seed=2), _randn(2, seed=3)])
    _fn_pair(TF.linear, F.linear, [_randn(2, 3, 4), _randn(2, 4, seed=2)])
    _fn_pair(TF.glu, F.glu, [x], dim=1)
    _fn_pair(TF.layer_norm, F.layer_norm, [x], normalized_shape=(4,))
    _fn_pair(TF.group_norm, F.group_norm, [_randn(2, 4, 3)], num_groups=2)
    _fn_pair(TF.rms_norm, F.rms_norm, [x], normalized_shape=[4])
    _fn_pair(lambda a, w: TF.embedding(torch.tensor([2, 0]), w),
             lambda a, w: F.embedding(ember.tensor([2, 0]), w), [x, _randn(3, 2)])
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(ember.randn(3, 3), 1)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\]"):
        F.layer_norm(ember.randn(3, 4), (5,))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(ember.randn(2, 6, 4), 4)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(to_ember(x))
    close(y, torch.softmax(x, 1))


def test_meta_device_shapes():
    m = ember.empty(2, 3, 4, device="meta")
    assert F.gelu(m).device.type == "meta"
    assert F.log_softmax(m, 1).shape == (2, 3, 4)
    assert F.silu(m).shape == (2, 3, 4)
