"""nn.utils.parametrize and parametrizations (orthogonal, weight_norm, spectral_norm), the legacy
weight_norm/spectral_norm hooks and the composite ops they need (matrix_exp, householder_product,
geqrf), against torch: values, gradients w.r.t. the originals with a random cotangent,
state_dict interchange both ways, optimiser steps, removal, caching and errors."""

from __future__ import annotations

import copy
import pickle
import re
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.ops.linalg as la
from ember.nn.utils import parametrizations as ez
from ember.nn.utils import parametrize as ep
from tests.nn._oracle import close, copy_state, run_pair, to_ember

tnn = torch.nn
tp = torch.nn.utils.parametrize
tz = torch.nn.utils.parametrizations


def _g(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _pair(make, seed=0):
    """The same module in both libraries, with torch's initial values copied into ember's."""
    torch.manual_seed(seed)
    tm, em = make(tnn), make(nn)
    copy_state(tm, em)
    return tm, em


def _sd_to_torch(em):
    return {k: torch.from_numpy(v.numpy().copy()) for k, v in em.state_dict().items()}


# -- parametrizations used throughout (one class per library) ----------------------------------
def _symmetric(lib):
    class Symmetric(lib.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

    return Symmetric()


def _scale(lib, k=2.0, inverse=True):
    class Scale(lib.Module):
        def forward(self, X):
            return X * k

    class ScaleInv(Scale):
        def right_inverse(self, X):
            return X / k

    return ScaleInv() if inverse else Scale()


def _split(lib):
    """forward(a, b) = a + b; right_inverse splits X into (X/2, X/2): two originals."""

    class Split(lib.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, X):
            return X / 2, X / 2

    return Split()


# -- composite ops ---------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.01, 1.0, 8.0, 60.0])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_matrix_exp_matches_torch(scale, dtype):
    a = _g((2, 4, 4), 1, dtype) * scale
    ea = to_ember(a, True)
    ta = a.clone().requires_grad_(True)
    et, tt = ember.matrix_exp(ea), torch.matrix_exp(ta)
    norm = float(tt.detach().abs().max())
    tol = (1e-11 if dtype == torch.float64 else 2e-6) * max(norm, 1.0)
    close(et, tt, tol, 1e-5 if dtype == torch.float32 else 1e-10)
    g = _g(tt.shape, 2, dtype)
    (tt * g).sum().backward()
    (et * to_ember(g)).sum().backward()
    gnorm = float(ta.grad.abs().max())
    close(ea.grad, ta.grad, (1e-10 if dtype == torch.float64 else 2e-5) * max(gnorm, 1.0), 1e-4)


def test_matrix_exp_noncontiguous_zero_size_and_errors():
    a = _g((5, 5), 3, torch.float64)
    ea, ta = to_ember(a).mT[::2, ::2], a.mT[::2, ::2]  # (3, 3) views, non-contiguous
    assert not ea.is_contiguous()
    close(ember.matrix_exp(ea), torch.matrix_exp(ta), 1e-12, 1e-12)
    eb = to_ember(a).expand(2, 5, 5)  # a stride-0 batch
    close(ember.matrix_exp(eb), torch.matrix_exp(a.expand(2, 5, 5)), 1e-12, 1e-12)
    assert ember.matrix_exp(ember.zeros(0, 0)).shape == (0, 0)
    assert ember.zeros(3, 2, 2).matrix_exp().shape == (3, 2, 2)
    with pytest.raises(RuntimeError, match=re.escape("linalg.matrix_exp: A must be batches of "
                                                     "square matrices, but they are 2 by 3")):
        ember.matrix_exp(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.matrix_exp(ember.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        ember.matrix_exp(ember.ones(2, 2, dtype=ember.int64))


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3), (4, 1), (1, 1)])
def test_geqrf_and_householder_product_match_torch(shape):
    a = _g(shape, 4, torch.float64)
    ta, ttau = torch.geqrf(a)
    ea, etau = ember.geqrf(to_ember(a))
    close(ea, ta, 1e-10, 1e-10)
    close(etau, ttau, 1e-10, 1e-10)
    if shape[-2] < shape[-1]:
        return
    x = to_ember(ta, True)
    tau = to_ember(ttau, True)
    tx, tt = ta.clone().requires_grad_(True), ttau.clone().requires_grad_(True)
    eq, tq = la.linalg_householder_product(x, tau), torch.linalg.householder_product(tx, tt)
    close(eq, tq, 1e-10, 1e-10)
    g = _g(tq.shape, 5, torch.float64)
    (tq * g).sum().backward()
    (eq * to_ember(g)).sum().backward()
    close(x.grad, tx.grad, 1e-9, 1e-9)
    close(tau.grad, tt.grad, 1e-9, 1e-9)
    close(ember.orgqr(to_ember(ta), to_ember(ttau)), torch.orgqr(ta, ttau), 1e-10, 1e-10)


def test_geqrf_degenerate_columns_and_errors():
    for a in (torch.zeros(3, 2), torch.tensor([[1.0, 2], [0, 3], [0, 0]]),
              torch.tensor([[-1.0, 2], [0, 3], [0, 1]])):
        ta, tt = torch.geqrf(a)
        ea, et = ember.geqrf(to_ember(a))
        close(ea, ta, 1e-6, 1e-6)
        close(et, tt, 1e-6, 1e-6)
    with pytest.raises(RuntimeError, match="torch.geqrf: input must have at least 2 dimensions"):
        ember.geqrf(ember.ones(3))
    with pytest.raises(NotImplementedError, match="geqrf_cpu"):
        ember.geqrf(ember.ones(3, 2, dtype=ember.int64))
    hp = la.linalg_householder_product
    for args, msg in [((ember.ones(2, 3), ember.ones(1)), "input.shape\\[-2\\] must be greater"),
                      ((ember.ones(3, 2), ember.ones(3)), "input.shape\\[-1\\] must be greater"),
                      ((ember.ones(2, 3, 2), ember.ones(2)), "one dimension less than input"),
                      ((ember.ones(2, 3, 2), ember.ones(3, 2)), "batch dimensions of tau"),
                      ((ember.ones(3, 2), ember.ones(2, dtype=ember.float64)),
                       "tau dtype Double does not match input dtype Float")]:
        with pytest.raises(RuntimeError, match=msg):
            hp(*args)


# -- register_parametrization -------------------------------------------------------------------
def test_class_swap_names_repr_and_state_dict_keys():
    tm, em = _pair(lambda lib: lib.Linear(3, 3))
    tp.register_parametrization(tm, "weight", _symmetric(tnn))
    ep.register_parametrization(em, "weight", _symmetric(nn))
    assert type(em).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert isinstance(em, nn.Linear)
    assert ep.type_before_parametrizations(em) is nn.Linear
    assert ep.type_before_parametrizations(nn.ReLU()) is nn.ReLU
    assert ep.is_parametrized(em) and ep.is_parametrized(em, "weight")
    assert not ep.is_parametrized(em, "bias")
    assert type(em.parametrizations.weight).__name__ == "ParametrizationList"
    assert list(em.state_dict()) == list(tm.state_dict()) == \
        ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert repr(em).replace("ember", "torch") == repr(tm)
    # a second instance of Linear is untouched: each module gets its own class
    assert type(nn.Linear(2, 2)) is nn.Linear


def test_values_and_gradients_wrt_original():
    tm, em = _pair(lambda lib: lib.Linear(4, 4))
    tp.register_parametrization(tm, "weight", _symmetric(tnn))
    ep.register_parametrization(em, "weight", _symmetric(nn))
    close(em.weight, tm.weight)
    x = _g((6, 4), 1).t().contiguous().t()  # non-contiguous rows
    run_pair(tm, em, [x], copy=False)
    assert em.parametrizations.weight.original.grad is not None


def test_chained_parametrizations_and_assignment():
    tm, em = _pair(lambda lib: lib.Linear(3, 3))
    for m, lib, reg in ((tm, tnn, tp), (em, nn, ep)):
        reg.register_parametrization(m, "weight", _scale(lib, 2.0))
        reg.register_parametrization(m, "weight", _symmetric(lib))
        reg.register_parametrization(m, "weight", _scale(lib, 3.0))
    assert len(em.parametrizations.weight) == 3
    close(em.weight, tm.weight)
    close(em.parametrizations.weight.original, tm.parametrizations.weight.original)
    run_pair(tm, em, [_g((2, 3), 1)], copy=False)
    # assignment runs right_inverse through the chain, last first (Symmetric has none)
    for m, reg in ((tm, tp), (em, ep)):
        reg.remove_parametrizations(m, "weight", leave_parametrized=True)
    for m, lib, reg in ((tm, tnn, tp), (em, nn, ep)):
        reg.register_parametrization(m, "weight", _scale(lib, 2.0))
        reg.register_parametrization(m, "weight", _scale(lib, 5.0))
    value = _g((3, 3), 7)
    original = em.parametrizations.weight.original
    tm.weight = value
    em.weight = to_ember(value)
    assert em.parametrizations.weight.original is original  # identity kept
    close(em.weight, value)
    close(em.parametrizations.weight.original, tm.parametrizations.weight.original)


def test_tuple_right_inverse_gives_original0_original1():
    tm, em = _pair(lambda lib: lib.Linear(3, 2))
    tp.register_parametrization(tm, "weight", _split(tnn))
    ep.register_parametrization(em, "weight", _split(nn))
    assert list(em.state_dict()) == list(tm.state_dict()) == \
        ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    plist = em.parametrizations.weight
    assert not plist.is_tensor and plist.ntensors == 2
    assert isinstance(plist.original0, ember.nn.Parameter)
    close(em.weight, tm.weight)
    run_pair(tm, em, [_g((4, 3), 2)], copy=False)
    em.weight = ember.ones(2, 3)
    close(plist.original0, np.full((2, 3), 0.5))
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        ep.remove_parametrizations(em, "weight", leave_parametrized=False)
    ep.remove_parametrizations(em, "weight")
    assert isinstance(em.weight, ember.nn.Parameter) and em.weight.requires_grad
    close(em.weight, np.ones((2, 3)))


def test_parametrized_buffer():
    class WithBuf(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", ember.arange(9.0).reshape(3, 3))

    class TWithBuf(tnn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.arange(9.0).reshape(3, 3))

    em, tm = WithBuf(), TWithBuf()
    ep.register_parametrization(em, "mask", _symmetric(nn))
    tp.register_parametrization(tm, "mask", _symmetric(tnn))
    assert list(em.state_dict()) == list(tm.state_dict()) == ["parametrizations.mask.original"]
    assert [n for n, _ in em.named_buffers()] == [n for n, _ in tm.named_buffers()]
    close(em.mask, tm.mask)
    ep.remove_parametrizations(em, "mask", leave_parametrized=False)
    assert "mask" in em._buffers and not isinstance(em.mask, ember.nn.Parameter)
    close(em.mask, np.arange(9.0).reshape(3, 3))


def test_state_dict_interchange_both_ways():
    tm, em = _pair(lambda lib: lib.Linear(3, 3))
    for m, lib, reg in ((tm, tnn, tp), (em, nn, ep)):
        reg.register_parametrization(m, "weight", _symmetric(lib))
        reg.register_parametrization(m, "bias", _scale(lib, 2.0))
    t_sd = {k: v.clone() + 0.5 for k, v in tm.state_dict().items()}
    tm.load_state_dict(t_sd)
    em.load_state_dict({k: to_ember(v) for k, v in t_sd.items()})
    close(em.weight, tm.weight)
    close(em.bias, tm.bias)
    # and back: ember's state into a fresh parametrized torch module
    tm2 = tnn.Linear(3, 3)
    tp.register_parametrization(tm2, "weight", _symmetric(tnn))
    tp.register_parametrization(tm2, "bias", _scale(tnn, 2.0))
    with ember.no_grad():
        em.parametrizations.weight.original.mul_(3.0)
    tm2.load_state_dict(_sd_to_torch(em))
    close(em.weight, tm2.weight)
    # a non-contiguous tensor loads too
    em.load_state_dict({**em.state_dict(), "parametrizations.weight.original":
                        to_ember(_g((3, 3), 8)).t()})
    close(em.parametrizations.weight.original, _g((3, 3), 8).t())


def test_optimizer_step_through_parametrization():
    tm, em = _pair(lambda lib: lib.Linear(3, 3))
    tp.register_parametrization(tm, "weight", _symmetric(tnn))
    ep.register_parametrization(em, "weight", _symmetric(nn))
    t_opt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    e_opt = ember.optim.SGD(em.parameters(), lr=0.1, momentum=0.9)
    x = _g((5, 3), 3)
    for step in range(3):
        g = _g((5, 3), 10 + step)
        t_opt.zero_grad()
        e_opt.zero_grad()
        (tm(x) * g).sum().backward()
        (em(to_ember(x)) * to_ember(g)).sum().backward()
        t_opt.step()
        e_opt.step()
    close(em.parametrizations.weight.original, tm.parametrizations.weight.original)
    close(em.weight, tm.weight)


def test_optimizer_built_before_registration_keeps_updating():
    em = nn.Linear(2, 2)
    weight = em.weight
    opt = ember.optim.SGD(em.parameters(), lr=1.0)
    ep.register_parametrization(em, "weight", _scale(nn, 2.0))
    assert em.parametrizations.weight.original is weight  # right_inverse result moved in place
    before = em.weight.detach().clone()
    em.weight.sum().backward()
    opt.step()
    close(em.weight, before.numpy() - 4.0)  # d(sum 2W)/dW = 2, and W = 2 * original


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    tm, em = _pair(lambda lib: lib.Linear(3, 3))
    for m, lib, reg in ((tm, tnn, tp), (em, nn, ep)):
        reg.register_parametrization(m, "weight", _scale(lib, 2.0))
        reg.register_parametrization(m, "bias", _scale(lib, 3.0))
    original = em.parametrizations.weight.original
    version = em._structure_version
    tp.remove_parametrizations(tm, "weight", leave_parametrized=leave)
    ep.remove_parametrizations(em, "weight", leave_parametrized=leave)
    assert em._structure_version > version
    assert em.weight is original and isinstance(em.weight, ember.nn.Parameter)
    close(em.weight, tm.weight)
    assert type(em).__name__ == "ParametrizedLinear"  # bias is still parametrized
    assert list(em.state_dict()) == list(tm.state_dict())
    ep.remove_parametrizations(em, "bias", leave_parametrized=leave)
    tp.remove_parametrizations(tm, "bias", leave_parametrized=leave)
    assert type(em) is nn.Linear and "parametrizations" not in em._modules
    assert list(em.state_dict()) == list(tm.state_dict()) == ["weight", "bias"]
    close(em.bias, tm.bias)
    run_pair(tm, em, [_g((2, 3), 1)], copy=False)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        ep.remove_parametrizations(em, "weight")


def test_cached():
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 2

    em = nn.Linear(2, 2)
    ep.register_parametrization(em, "weight", Counting())
    calls.clear()
    assert em.weight is not em.weight and len(calls) == 2
    with ep.cached():
        w = em.weight
        with ep.cached():  # nesting keeps the cache
            assert em.weight is w
        assert em.weight is w
        out = em(ember.ones(1, 2))
    assert len(calls) == 3
    assert em.weight is not w  # cleared on exit
    out.sum().backward()
    assert em.parametrizations.weight.original.grad is not None
    assert not ep._cache


def test_deepcopy_and_pickle():
    em = nn.Linear(3, 3)
    ep.register_parametrization(em, "weight", _symmetric(nn))
    dup = copy.deepcopy(em)
    assert type(dup).__name__ == "ParametrizedLinear" and type(dup) is not type(em)
    close(dup.weight, em.weight)
    assert dup.parametrizations.weight.original is not em.parametrizations.weight.original
    ep.remove_parametrizations(dup, "weight")
    assert type(dup) is nn.Linear
    close(em.weight, em.weight.mT)  # the original's class kept its property
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only"):
        pickle.dumps(em)


def test_transfer_parametrizations_and_params():
    src = nn.Linear(3, 3)
    ep.register_parametrization(src, "weight", _symmetric(nn))
    ep.register_parametrization(src, "bias", _split(nn))
    dst = nn.Linear(3, 3)
    ep.transfer_parametrizations_and_params(src, dst)
    assert type(dst).__name__ == "ParametrizedLinear"
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    assert dst.parametrizations.bias.original1 is src.parametrizations.bias.original1
    close(dst.weight, src.weight)
    close(dst.bias, src.bias)
    empty = nn.Module()
    ep.transfer_parametrizations_and_params(src, empty, "weight")
    close(empty.weight, src.weight)
    assert ep.transfer_parametrizations_and_params(nn.Linear(2, 2), dst) is dst


def test_train_eval_reaches_parametrizations():
    em = nn.Linear(2, 2).eval()
    p = _symmetric(nn)
    ep.register_parametrization(em, "weight", p)
    assert not p.training
    em.train()
    assert p.training


# -- errors ------------------------------------------------------------------------------------
def _raises_like(fn_t, fn_e, exc, pattern):
    with pytest.raises(exc) as t_info:
        fn_t()
    with pytest.raises(exc, match=pattern) as e_info:
        fn_e()
    return str(t_info.value), str(e_info.value)


def test_errors_match_torch():
    t_msg, e_msg = _raises_like(
        lambda: tp.register_parametrization(tnn.Linear(2, 2), "foo", _symmetric(tnn)),
        lambda: ep.register_parametrization(nn.Linear(2, 2), "foo", _symmetric(nn)),
        ValueError, "does not have a parameter, a buffer, or a parametrized element with "
                    "name 'foo'")
    assert t_msg == e_msg

    class ToDouble(nn.Module):
        def forward(self, X):
            return X.double()

    class TToDouble(tnn.Module):
        def forward(self, X):
            return X.double()

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:1]

    class TShrink(tnn.Module):
        def forward(self, X):
            return X[:1]

    for e_cls, t_cls, word in ((ToDouble, TToDouble, "dtype"), (Shrink, TShrink, "shape")):
        t_msg, e_msg = _raises_like(
            lambda t_cls=t_cls: tp.register_parametrization(tnn.Linear(2, 2), "weight", t_cls()),
            lambda e_cls=e_cls: ep.register_parametrization(nn.Linear(2, 2), "weight", e_cls()),
            ValueError, f"may not change the {word} of the tensor, unless `unsafe`")
        assert t_msg.splitlines()[0] == e_msg.splitlines()[0]
        assert e_msg.splitlines()[1].startswith(f"unparametrized {word}: ")
        # chained: torch's other wording
        em, tm = nn.Linear(2, 2), tnn.Linear(2, 2)
        ep.register_parametrization(em, "weight", _symmetric(nn))
        tp.register_parametrization(tm, "weight", _symmetric(tnn))
        t_msg, e_msg = _raises_like(
            lambda t_cls=t_cls, tm=tm: tp.register_parametrization(tm, "weight", t_cls()),
            lambda e_cls=e_cls, em=em: ep.register_parametrization(em, "weight", e_cls()),
            ValueError, f"module.weight.{word}: ")
        assert t_msg.splitlines()[0] == e_msg.splitlines()[0]
        assert e_msg.splitlines()[2].startswith(f"parametrization(module.weight).{word}: ")
        # unsafe allows it
        m = ep.register_parametrization(nn.Linear(2, 2), "weight", e_cls(), unsafe=True)
        assert m.weight.dtype == (ember.float64 if word == "dtype" else ember.float32)

    class BadInverse(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return X.double()

    class TBadInverse(tnn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return X.double()

    t_msg, e_msg = _raises_like(
        lambda: tp.register_parametrization(tnn.Linear(2, 2), "weight", TBadInverse()),
        lambda: ep.register_parametrization(nn.Linear(2, 2), "weight", BadInverse()),
        ValueError, "When `right_inverse` outputs one tensor, it may not change the dtype")
    assert t_msg.splitlines()[0] == e_msg.splitlines()[0]
    em, tm = nn.Linear(2, 2), tnn.Linear(2, 2)
    ep.register_parametrization(em, "weight", _symmetric(nn))
    tp.register_parametrization(tm, "weight", _symmetric(tnn))
    t_msg, e_msg = _raises_like(
        lambda: tp.register_parametrization(tm, "weight", TBadInverse()),
        lambda: ep.register_parametrization(em, "weight", BadInverse()),
        ValueError, "The tensor returned by parametrization.right_inverse must have the same "
                    "dtype as module.weight")
    assert e_msg.splitlines()[2].startswith("returned dtype: ")

    class NoTensor(nn.Module):
        def forward(self, X):
            return 3

    with pytest.raises(ValueError, match="A parametrization must return a tensor. Got int."):
        ep.register_parametrization(nn.Linear(2, 2), "weight", NoTensor(), unsafe=False)


def test_assignment_errors():
    em, tm = nn.Linear(2, 2), tnn.Linear(2, 2)
    ep.register_parametrization(em, "weight", _symmetric(nn))
    tp.register_parametrization(tm, "weight", _symmetric(tnn))
    _raises_like(lambda: setattr(tm, "weight", torch.ones(2, 2)),
                 lambda: setattr(em, "weight", ember.ones(2, 2)),
                 RuntimeError, "parametrization Symmetric does not implement right_inverse.")
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        em.weight = ember.nn.Parameter(ember.ones(2, 2))
    with pytest.raises(KeyError):
        tm.weight = tnn.Parameter(torch.ones(2, 2))
    em2 = nn.Linear(2, 2)
    ep.register_parametrization(em2, "weight", BadOut())
    with pytest.raises(ValueError, match="The tensor returned by `right_inverse` has dtype "
                                         "ember.float64 while `original` has dtype"):
        em2.weight = ember.ones(2, 2)
    em3 = nn.Linear(2, 3)
    ep.register_parametrization(em3, "weight", _split(nn))
    em3.parametrizations.weight[0].right_inverse = lambda X: (X,)
    with pytest.raises(ValueError, match="sequence of tensors of length 2. Got a sequence of "
                                         "length 1"):
        em3.weight = ember.ones(3, 2)


class BadOut(nn.Module):
    """Registers fine (right_inverse is skipped while it raises NotImplementedError), then
    returns the wrong dtype on assignment."""

    armed = False

    def forward(self, X):
        return X

    def right_inverse(self, X):
        if not self.armed:
            self.armed = True
            raise NotImplementedError
        return X.double()


# -- orthogonal ----------------------------------------------------------------------------------
_ORTH_CASES = [((4, 4), "matrix_exp"), ((4, 4), "cayley"), ((4, 4), "householder"),
               ((5, 3), "matrix_exp"), ((5, 3), "cayley"), ((5, 3), "householder"),
               ((3, 5), "matrix_exp"), ((3, 5), "householder")]


def _orth_pair(shape, orth_map, trivial=True, seed=0):
    tm, em = _pair(lambda lib: lib.Linear(shape[1], shape[0]), seed)
    tz.orthogonal(tm, orthogonal_map=orth_map, use_trivialization=trivial)
    ez.orthogonal(em, orthogonal_map=orth_map, use_trivialization=trivial)
    return tm, em


@pytest.mark.parametrize("trivial", [True, False])
@pytest.mark.parametrize("shape,orth_map", _ORTH_CASES)
def test_orthogonal_matches_torch(shape, orth_map, trivial):
    tm, em = _orth_pair(shape, orth_map, trivial)
    if not trivial and orth_map != "householder":
        # registration treats the NotImplemented right_inverse as the identity; assignment fails
        close(em.weight, tm.weight, 1e-5, 1e-5)
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            em.weight = em.weight.detach()
        return
    assert list(em.state_dict()) == list(tm.state_dict())
    copy_state(tm, em)  # base is completed at random for non-square shapes
    close(em.weight, tm.weight, 1e-5, 1e-5)
    w = em.weight.detach()
    gram = w.mT @ w if shape[0] >= shape[1] else w @ w.mT
    close(gram, np.eye(min(shape)), 1e-5, 1e-5)
    # move away from the starting point so the gradients are generic
    with torch.no_grad():
        tm.parametrizations.weight.original.add_(0.3 * _g(shape, 9).tril())
    copy_state(tm, em)
    run_pair(tm, em, [_g((2, shape[1]), 1)], copy=False, tol=2e-5)


def test_orthogonal_assignment_and_batches():
    tm, em = _orth_pair((4, 4), "matrix_exp")
    q = _g((4, 4), 3)
    tm.weight = q
    em.weight = to_ember(q)
    close(em.parametrizations.weight[0].base, tm.parametrizations.weight[0].base, 1e-5, 1e-5)
    close(em.weight, tm.weight, 1e-5, 1e-5)
    close(em.parametrizations.weight.original, -np.eye(4))
    # an already orthogonal matrix is kept as it is
    em.weight = em.weight.detach().clone()
    close(em.weight, tm.weight, 1e-5, 1e-5)
    # a batch of matrices (a 3-d buffer)
    for map_ in ("matrix_exp", "cayley", "householder"):
        em, tm = nn.Module(), tnn.Module()
        x = _g((2, 4, 3), 5)
        em.register_buffer("w", to_ember(x))
        tm.register_buffer("w", x.clone())
        ez.orthogonal(em, "w", map_)
        tz.orthogonal(tm, "w", map_)
        copy_state(tm, em)
        close(em.w, tm.w, 1e-5, 1e-5)


def test_orthogonal_training_step():
    tm, em = _orth_pair((4, 3), "cayley")
    copy_state(tm, em)
    t_opt = torch.optim.SGD(tm.parameters(), lr=0.1)
    e_opt = ember.optim.SGD(em.parameters(), lr=0.1)
    x, g = _g((3, 3), 1), _g((3, 4), 2)
    for _ in range(2):
        t_opt.zero_grad()
        e_opt.zero_grad()
        (tm(x) * g).sum().backward()
        (em(to_ember(x)) * to_ember(g)).sum().backward()
        t_opt.step()
        e_opt.step()
    close(em.weight, tm.weight, 1e-5, 1e-5)
    w = em.weight.detach()
    close(w.mT @ w, np.eye(3), 1e-5, 1e-5)


def test_orthogonal_errors_and_default_map():
    em = ez.orthogonal(nn.Linear(3, 3))
    assert em.parametrizations.weight[0].orthogonal_map == "matrix_exp"
    assert ez.orthogonal(nn.Linear(3, 5)).parametrizations.weight[0].orthogonal_map == \
        "householder"
    _raises_like(lambda: tz.orthogonal(tnn.Linear(2, 2), "foo"),
                 lambda: ez.orthogonal(nn.Linear(2, 2), "foo"),
                 ValueError, "has no parameter or buffer with name 'foo'")
    _raises_like(lambda: tz.orthogonal(tnn.Linear(2, 2), "bias"),
                 lambda: ez.orthogonal(nn.Linear(2, 2), "bias"),
                 ValueError, "Expected a matrix or batch of matrices. Got a tensor of 1 dim")
    _raises_like(lambda: tz.orthogonal(tnn.Linear(2, 2), orthogonal_map="qr"),
                 lambda: ez.orthogonal(nn.Linear(2, 2), orthogonal_map="qr"),
                 ValueError, 'orthogonal_map has to be one of "matrix_exp", "cayley", '
                             '"householder". Got: qr')
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        em.weight = ember.ones(2, 2)


# -- weight_norm (parametrization) ------------------------------------------------------------------
@pytest.mark.parametrize("make,dim", [(lambda lib: lib.Linear(4, 3), 0),
                                      (lambda lib: lib.Linear(4, 3), 1),
                                      (lambda lib: lib.Linear(4, 3), None),
                                      (lambda lib: lib.Linear(4, 3), -2),
                                      (lambda lib: lib.Conv1d(2, 3, 3), 0),
                                      (lambda lib: lib.Conv1d(2, 3, 3), 2)])
def test_weight_norm_parametrization(make, dim):
    tm, em = _pair(make)
    tz.weight_norm(tm, dim=dim)
    ez.weight_norm(em, dim=dim)
    assert list(em.state_dict()) == list(tm.state_dict())
    for k in ("original0", "original1"):
        close(getattr(em.parametrizations.weight, k), getattr(tm.parametrizations.weight, k))
    close(em.weight, tm.weight)
    with torch.no_grad():  # a magnitude that differs from the norm
        tm.parametrizations.weight.original0.mul_(1.5)
    x = _g((2, 4), 1) if isinstance(tm, tnn.Linear) else _g((2, 2, 6), 1)
    run_pair(tm, em, [x])
    tz_out = {k: v.clone() for k, v in tm.state_dict().items()}
    em.load_state_dict({k: to_ember(v) for k, v in tz_out.items()})
    tm.load_state_dict(_sd_to_torch(em))


def test_weight_norm_legacy_keys_load_and_vector_weight():
    legacy = nn.Linear(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(legacy)
    sd = legacy.state_dict()
    em = ez.weight_norm(nn.Linear(4, 3))
    em.load_state_dict(sd)
    close(em.weight, legacy.weight)
    # a 1-d tensor with dim 0: the norm of each element is its magnitude
    tb, eb = tnn.Module(), nn.Module()
    tb.register_parameter("v", tnn.Parameter(torch.tensor([3.0, -2.0, 0.5])))
    eb.register_parameter("v", nn.Parameter(ember.tensor([3.0, -2.0, 0.5])))
    tz.weight_norm(tb, "v")
    ez.weight_norm(eb, "v")
    close(eb.parametrizations.v.original0, tb.parametrizations.v.original0)
    close(eb.v, tb.v)


# -- spectral_norm (parametrization) ----------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda lib: lib.Linear(5, 3),
                                  lambda lib: lib.Conv2d(2, 4, 3),
                                  lambda lib: lib.ConvTranspose2d(3, 2, 3)])
def test_spectral_norm_parametrization(make):
    tm, em = _pair(make)
    tz.spectral_norm(tm, n_power_iterations=2)
    ez.spectral_norm(em, n_power_iterations=2)
    sn = em.parametrizations.weight[0]
    assert sn.dim == (1 if isinstance(em, nn.ConvTranspose2d) else 0)
    assert list(em.state_dict()) == list(tm.state_dict())
    copy_state(tm, em)  # u and v start at random
    x = _g((2, 5), 1) if isinstance(tm, tnn.Linear) else _g((2, em.in_channels, 6, 6), 1)
    run_pair(tm, em, [x], copy=False, tol=2e-5)  # training: u, v updated (compared as buffers)
    em.eval()
    tm.eval()  # (reading tm.weight in training mode would run another power iteration)
    w = em.weight.detach().numpy()
    w = w if sn.dim == 0 else w.swapaxes(0, 1)
    assert abs(np.linalg.norm(w.reshape(w.shape[0], -1), 2) - 1.0) < 0.2
    u = sn._u.clone()
    run_pair(tm, em, [x], copy=False, tol=2e-5)
    close(sn._u, u)  # eval: no update
    close(em.weight, tm.weight, 2e-5, 2e-5)


def test_spectral_norm_parametrization_vector_and_errors():
    tb, eb = tnn.Module(), nn.Module()
    tb.register_parameter("v", tnn.Parameter(torch.tensor([3.0, -4.0])))
    eb.register_parameter("v", nn.Parameter(ember.tensor([3.0, -4.0])))
    tz.spectral_norm(tb, "v")
    ez.spectral_norm(eb, "v")
    close(eb.v, tb.v)
    assert list(eb.state_dict()) == list(tb.state_dict()) == ["parametrizations.v.original"]
    _raises_like(lambda: tz.spectral_norm(tnn.Linear(2, 2), n_power_iterations=0),
                 lambda: ez.spectral_norm(nn.Linear(2, 2), n_power_iterations=0),
                 ValueError, "Expected n_power_iterations to be positive, but got "
                             "n_power_iterations=0")
    t_msg, e_msg = _raises_like(lambda: tz.spectral_norm(tnn.Linear(2, 2), dim=2),
                                lambda: ez.spectral_norm(nn.Linear(2, 2), dim=2),
                                IndexError, re.escape("Dimension out of range (expected to be "
                                                      "in range of [-2, 1] but got 2)"))
    assert t_msg == e_msg
    _raises_like(lambda: tz.spectral_norm(tnn.Linear(2, 2), "foo"),
                 lambda: ez.spectral_norm(nn.Linear(2, 2), "foo"),
                 ValueError, "has no parameter or buffer with name 'foo'")


# -- legacy hooks ------------------------------------------------------------------------------
def test_legacy_weight_norm():
    tm, em = _pair(lambda lib: lib.Linear(4, 3))
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        nn.utils.weight_norm(em)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tnn.utils.weight_norm(tm)
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the "
                                               "same parameter weight"):
            nn.utils.weight_norm(em)
    assert list(em.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    close(em.weight_g, tm.weight_g)
    with torch.no_grad():
        tm.weight_g.mul_(2.0)
    run_pair(tm, em, [_g((2, 4), 1)])
    tm.load_state_dict(_sd_to_torch(em))
    nn.utils.remove_weight_norm(em)
    tnn.utils.remove_weight_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    close(em.weight, tm.weight)
    assert isinstance(em.weight, ember.nn.Parameter)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(em)


def test_legacy_weight_norm_dim_none():
    tm, em = _pair(lambda lib: lib.Conv1d(2, 3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tnn.utils.weight_norm(tm, dim=None)
        nn.utils.weight_norm(em, dim=None)
    assert em.weight_g.shape == tm.weight_g.shape == ()
    run_pair(tm, em, [_g((2, 2, 5), 1)])


def test_legacy_spectral_norm():
    tm, em = _pair(lambda lib: lib.Linear(5, 3))
    tnn.utils.spectral_norm(tm)
    nn.utils.spectral_norm(em)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(em)
    assert list(em.state_dict()) == list(tm.state_dict()) == \
        ["bias", "weight_orig", "weight_u", "weight_v"]
    assert em.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    assert "weight" not in em._parameters and isinstance(em.weight, ember.Tensor)
    copy_state(tm, em)
    x = _g((2, 5), 1)
    run_pair(tm, em, [x], copy=False)  # training: one power iteration each
    em.eval()
    tm.eval()
    run_pair(tm, em, [x], copy=False)
    tm.load_state_dict(_sd_to_torch(em))
    nn.utils.remove_spectral_norm(em)
    tnn.utils.remove_spectral_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    close(em.weight, tm.weight)
    assert not em._state_dict_hooks and not em._load_state_dict_pre_hooks
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(em)


def test_legacy_spectral_norm_version0_state_dict():
    """A version-0 state dict (``weight``, ``weight_orig``, ``weight_u``) recovers ``weight_v``
    the same way in both libraries."""
    tm, em = _pair(lambda lib: lib.Conv2d(1, 6, 2))  # a tall (6, 4) matrix: W^T W invertible
    tnn.utils.spectral_norm(tm)
    nn.utils.spectral_norm(em)
    tm(_g((1, 1, 4, 4), 1))
    old = tm.state_dict()
    del old["weight_v"]
    old["weight"] = tm.weight.detach().clone()
    old._metadata = {"": {"version": 1, "spectral_norm": {"weight.version": 0}}}
    eold = type(old)({k: to_ember(v) for k, v in old.items()})
    eold._metadata = old._metadata
    tm.load_state_dict(old)
    em.load_state_dict(eold)
    close(em.weight_v, tm.weight_v, 1e-4, 1e-4)
    tm.eval()
    em.eval()
    close(em(to_ember(_g((1, 1, 4, 4), 2))), tm(_g((1, 1, 4, 4), 2)), 1e-4, 1e-4)
