"""ctc_loss and CTCLoss against torch: values and gradients w.r.t. log_probs (float32 and
float64), every reduction, padded and concatenated targets, varying lengths, repeated labels,
impossible alignments with and without zero_infinity, non-contiguous and unbatched inputs, a
non-zero blank, the module, and torch's argument errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.nn._oracle import to_ember

REDUCTIONS = ["none", "sum", "mean"]
DTYPES = [torch.float64, torch.float32]
TOL = {torch.float64: 1e-10, torch.float32: 1e-4}


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _log_probs(t, n, c, dtype, seed=0):
    """Leaf log-probabilities ``(T, N, C)`` (``(T, C)`` when ``n`` is None)."""
    shape = (t, c) if n is None else (t, n, c)
    return torch.randn(shape, generator=_g(seed), dtype=dtype).log_softmax(-1)


def _targets(n, s, c, blank=0, seed=1):
    """``(N, S)`` labels in ``[0, C)`` avoiding ``blank``."""
    labels = torch.randint(0, c - 1, (n, s), generator=_g(seed))
    return labels + (labels >= blank).long()


def _concat(padded, tl):
    return torch.cat([padded[i, :k] for i, k in enumerate(tl)])


def _lens(v, as_tensor):
    return torch.tensor(v) if as_tensor else list(v)


def _e(x):
    if isinstance(x, list | tuple):
        return type(x)(_e(v) for v in x)
    return to_ember(x) if isinstance(x, torch.Tensor) else x


def _close(a, b, tol, msg):
    a, b = a.detach().numpy(), b.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype, f"{msg}: {a.shape} {a.dtype} vs {b.shape} " \
        f"{b.dtype}"
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=msg)


def _check(lp, targets, il, tl, *, view=None, seed=7, module=False, **kw):
    """Loss and the gradient of ``(loss * g).sum()`` w.r.t. the leaf ``lp`` in both libraries.

    ``view`` maps the leaf to the log_probs actually passed (e.g. a transpose)."""
    view = view or (lambda x: x)
    t_leaf = lp.detach().clone().requires_grad_(True)
    e_leaf = to_ember(lp, requires_grad=True)
    if module:
        t_out = torch.nn.CTCLoss(**kw)(view(t_leaf), targets, il, tl)
        e_out = nn.CTCLoss(**kw)(view(e_leaf), _e(targets), _e(il), _e(tl))
    else:
        t_out = TF.ctc_loss(view(t_leaf), targets, il, tl, **kw)
        e_out = F.ctc_loss(view(e_leaf), _e(targets), _e(il), _e(tl), **kw)
    tol = TOL[lp.dtype]
    _close(e_out, t_out, tol, "loss")
    g = torch.randn(t_out.shape, generator=_g(seed), dtype=t_out.dtype)
    (t_out * g).sum().backward()
    (e_out * to_ember(g)).sum().backward()
    _close(e_leaf.grad, t_leaf.grad, tol, "grad")
    return e_out, e_leaf.grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("tensor_lengths", [False, True])
def test_values_and_grads(dtype, reduction, concatenated, tensor_lengths):
    t, n, c, s = 12, 4, 6, 5
    lp = _log_probs(t, n, c, dtype)
    padded = _targets(n, s, c)
    il, tl = [12, 9, 11, 7], [5, 3, 0, 2]  # lengths under T and S, one empty target
    targets = _concat(padded, tl) if concatenated else padded
    _check(lp, targets, _lens(il, tensor_lengths), _lens(tl, tensor_lengths),
           reduction=reduction)


@pytest.mark.parametrize("dtype", DTYPES)
def test_longer_sequences(dtype):
    t, n, c, s = 40, 6, 12, 15
    lp = _log_probs(t, n, c, dtype, seed=3)
    targets = _targets(n, s, c, seed=4)
    il = torch.randint(30, t + 1, (n,), generator=_g(5))
    tl = torch.randint(1, s + 1, (n,), generator=_g(6))
    _check(lp, targets, il, tl, reduction="mean")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_repeated_labels(dtype, reduction):
    # [2, 2, 2] needs two blanks in between: 5 frames at least; [1, 1, 3, 3] needs 6
    lp = _log_probs(8, 4, 5, dtype)
    targets = torch.tensor([[2, 2, 2, 0], [1, 1, 3, 3], [4, 4, 4, 4], [3, 1, 3, 1]])
    il, tl = [5, 6, 8, 4], [3, 4, 4, 4]  # all exactly feasible or with slack
    out, _ = _check(lp, targets, il, tl, reduction="none")
    assert np.isfinite(out.detach().numpy()).all()
    _check(lp, targets, il, tl, reduction=reduction)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_impossible_alignments(dtype, reduction, zero_infinity):
    lp = _log_probs(8, 4, 5, dtype)
    targets = torch.tensor([[2, 2, 2], [1, 3, 4], [1, 2, 3], [4, 4, 1]])
    # sample 0: repeats need 5 frames, has 4; sample 1: 3 labels in 2 frames; sample 3: none
    il, tl = [4, 2, 8, 0], [3, 3, 3, 2]
    out, grad = _check(lp, targets, il, tl, reduction=reduction, zero_infinity=zero_infinity)
    per_sample, _ = _check(lp, targets, il, tl, reduction="none", zero_infinity=zero_infinity)
    values = per_sample.detach().numpy()
    grad = grad.numpy()
    if zero_infinity:
        assert values[[0, 1, 3]].tolist() == [0.0, 0.0, 0.0]
        assert np.isfinite(grad).all()
        assert (grad[:, [0, 1, 3]] == 0).all()
    else:
        assert np.isinf(values[[0, 1, 3]]).all() and np.isfinite(values[2])
        assert np.isnan(grad[:4, 0]).all() and (grad[4:, 0] == 0).all()  # torch: NaN in length
    assert np.isfinite(grad[:, 2]).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_lengths(dtype):
    lp = _log_probs(5, 3, 4, dtype)
    targets = torch.tensor([[1, 2], [3, 3], [2, 1]])
    # empty input with empty target: loss 0; empty input with a target: inf
    for zero_infinity in (False, True):
        _check(lp, targets, [0, 5, 0], [0, 0, 1], reduction="none", zero_infinity=zero_infinity)
    _check(lp, targets, [0, 5, 3], [0, 0, 1], reduction="mean")
    for empty in (torch.zeros(0, dtype=torch.long), torch.zeros(3, 0, dtype=torch.long)):
        _check(lp, empty, [5, 3, 0], [0, 0, 0], reduction="none")  # only blanks


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_non_contiguous_log_probs(dtype, reduction):
    n, t, c = 3, 7, 5
    x = torch.randn(n, t, c, generator=_g(11), dtype=dtype).log_softmax(2)  # (N, T, C)
    targets = _targets(n, 3, c)
    assert not to_ember(x).transpose(0, 1).is_contiguous()
    _check(x, targets, [7, 6, 5], [3, 2, 3], view=lambda v: v.transpose(0, 1),
           reduction=reduction)
    # a class slice with a step: (T, N, 2C) -> (T, N, C)
    wide = _log_probs(t, n, 2 * c, dtype, seed=12)
    _check(wide, targets, [7, 7, 4], [3, 3, 1], view=lambda v: v[:, :, ::2],
           reduction=reduction)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unbatched(dtype, reduction):
    lp = _log_probs(9, None, 5, dtype)
    targets = torch.tensor([3, 1, 1, 4])
    out, _ = _check(lp, targets, [8], [4], reduction=reduction)
    assert out.shape == ()
    _check(lp, targets[:3], torch.tensor(9), torch.tensor(3), reduction=reduction)
    _check(lp, targets[None], [9], [4], reduction=reduction)  # a (1, S) target works too


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("blank", [2, 5])
def test_nonzero_blank(dtype, blank):
    lp = _log_probs(10, 3, 6, dtype)
    padded = _targets(3, 4, 6, blank=blank)
    assert not (padded == blank).any()
    tl = [4, 2, 3]
    for reduction in REDUCTIONS:
        _check(lp, padded, [10, 8, 6], tl, blank=blank, reduction=reduction)
    _check(lp, _concat(padded, tl), [10, 8, 6], tl, blank=blank, zero_infinity=True)


def test_target_and_length_dtypes():
    lp = _log_probs(6, 2, 5, torch.float64)
    targets = torch.tensor([[1, 2, 2], [3, 1, 4]])
    il, tl = [6, 5], [3, 2]
    _check(lp, targets.int(), il, tl, reduction="none")
    _check(lp, targets.double() + 0.5, il, tl, reduction="none")  # truncated to int64
    _check(lp, targets, torch.tensor(il, dtype=torch.int32), torch.tensor(tl, dtype=torch.int32))
    _check(lp, targets, torch.tensor([il]), torch.tensor(tl).reshape(2, 1))  # flattened
    _check(lp, targets, [torch.tensor(6), torch.tensor(5)], (3, 2))  # 0-d tensors in a list


@pytest.mark.parametrize("dtype", DTYPES)
def test_through_log_softmax(dtype):
    logits = torch.randn(10, 3, 6, generator=_g(21), dtype=dtype)
    targets = _targets(3, 4, 6)
    _check(logits, targets, [10, 9, 8], [4, 3, 4], view=lambda v: v.log_softmax(2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_module(dtype, reduction):
    lp = _log_probs(9, 3, 6, dtype)
    targets = _targets(3, 4, 6, blank=1)
    il, tl = torch.tensor([9, 2, 7]), torch.tensor([4, 4, 1])
    for zero_infinity in (False, True):
        _check(lp, targets, il, tl, module=True, blank=1, reduction=reduction,
               zero_infinity=zero_infinity)
    m = nn.CTCLoss(blank=3, reduction=reduction, zero_infinity=True)
    assert (m.blank, m.reduction, m.zero_infinity) == (3, reduction, True)
    assert repr(m) == repr(torch.nn.CTCLoss()) == "CTCLoss()"
    assert m.state_dict() == {} and list(m.parameters()) == []


def test_no_grad_and_forward_only():
    lp = _log_probs(6, 2, 4, torch.float64)
    targets = torch.tensor([[1, 2], [3, 3]])
    out = F.ctc_loss(to_ember(lp), to_ember(targets), [6, 6], [2, 2])
    assert not out.requires_grad
    with ember.no_grad():
        out = F.ctc_loss(to_ember(lp, requires_grad=True), to_ember(targets), [6, 6], [2, 2])
    assert not out.requires_grad
    _close(out, TF.ctc_loss(lp, targets, [6, 6], [2, 2]), 1e-12, "loss")


# -- errors -----------------------------------------------------------------------------------
_LP = _log_probs(6, 2, 5, torch.float32)
_TG = torch.tensor([[1, 2, 2], [3, 1, 4]])
T_ = torch.tensor

ERROR_CASES = {
    "bad reduction": (_LP, _TG, [6, 5], [3, 2], {"reduction": "avg"}),
    "float input_lengths": (_LP, _TG, T_([6.0, 5.0]), T_([3, 2]), {}),
    "bool input_lengths": (_LP, _TG, T_([True, True]), T_([3, 2]), {}),
    "float target_lengths": (_LP, _TG, T_([6, 5]), T_([3.0, 2.0]), {}),
    "integer log_probs": (_LP.long(), _TG, [6, 5], [3, 2], {}),
    "half log_probs": (_LP.half(), _TG, [6, 5], [3, 2], {}),
    "empty log_probs": (_LP[:, :0], _TG[:0], [], [], {}),
    "empty before dims": (torch.zeros(0, 2, 3, 4), _TG, [6, 5], [3, 2], {}),
    "4-d log_probs": (_LP[None], _TG, [6, 5], [3, 2], {"blank": 9}),
    "1-d log_probs": (_LP[:, 0, 0], _TG, [6, 5], [3, 2], {}),
    "0-d log_probs": (_LP[0, 0, 0], _TG, [6, 5], [3, 2], {}),
    "3-d targets": (_LP, _TG[None], [6, 5], [3, 2], {"blank": 9}),
    "0-d targets": (_LP, T_(1), [6, 5], [3, 2], {}),
    "blank too large": (_LP, _TG, [6, 5, 1], [3, 2], {"blank": 5}),
    "negative blank": (_LP, _TG, [6, 5], [3, 2], {"blank": -1}),
    "input_lengths size": (_LP, _TG, [6, 5, 5], [3], {}),
    "target_lengths size": (_LP, _TG, [6, 5], [3], {}),
    "input_lengths tensor size": (_LP, _TG, T_([6]), T_([3, 2]), {}),
    "negative target length first": (_LP, _TG, [-1, 5], [-1, 2], {}),
    "negative target length concatenated": (_LP, T_([1, 2, 2, 3, 1]), [6, 5], [-1, 2], {}),
    "padded batch": (_LP, _TG[:1], [6, 5], [4, 2], {}),
    "padded too short": (_LP, _TG, [7, 5], [4, 2], {}),
    "concatenated length": (_LP, T_([1, 2, 2, 3]), [6, 5], [3, 2], {}),
    "input length too long": (_LP, _TG, [7, -1], [3, 2], {}),
    "negative input length": (_LP, _TG, [6, -1], [3, 2], {}),
    "unbatched input length": (_LP[:, 0], _TG[0], [7], [3], {}),
    "unbatched lengths size": (_LP[:, 0], _TG[0], [6, 5], [3, 2], {}),
    "mixed length kinds": (_LP, _TG, T_([6, 5]), [3, 2], {}),
    "int lengths": (_LP[:, 0], _TG[0], 6, 3, {}),
    "float lengths list": (_LP, _TG, [6.0, 5.0], [3, 2], {}),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_errors_match_torch(name):
    lp, targets, il, tl, kw = ERROR_CASES[name]
    with pytest.raises(Exception) as t_err:
        TF.ctc_loss(lp, targets, il, tl, **kw)
    with pytest.raises(Exception) as e_err:
        F.ctc_loss(_e(lp), _e(targets), _e(il), _e(tl), **kw)
    assert e_err.type is t_err.type, (e_err.value, t_err.value)
    if t_err.type is not TypeError:  # torch's TypeError is its argument parser's signature dump
        assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("bad", [7, -1])
def test_target_out_of_range_raises(bad):
    # torch reads outside log_probs here; ember refuses
    targets = to_ember(T_([[1, bad, 2], [3, 1, 4]]))
    with pytest.raises(RuntimeError, match=rf"target value {bad} is out of range; expected "
                                           r"class indices in \[0, 5\)"):
        F.ctc_loss(to_ember(_LP), targets, [6, 5], [3, 2])
    # values past a target's length are never read, so they may be anything
    F.ctc_loss(to_ember(_LP), targets, [6, 5], [1, 2])
