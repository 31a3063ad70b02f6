"""0-d tensors where a schema takes a number (NOTE [Numbers passed as 0-d tensors]), and
Tensor methods as plain functions (NOTE [Tensor methods are functions]), against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatch import DispatchMode
from tests.opinfo import to_torch


def _lib_f(lib):
    return lib.nn.functional


# (name, fn(lib, x, T) -> tensor) where T(v) makes a 0-d tensor of ``lib``
CASES = [
    ("transpose", lambda lib, x, T: x.transpose(T(0), 1)),
    ("select", lambda lib, x, T: x.select(0, T(1))),
    ("narrow", lambda lib, x, T: lib.narrow(x, 1, T(1), 2)),
    ("unsqueeze", lambda lib, x, T: x.unsqueeze(T(-1))),
    ("diagonal", lambda lib, x, T: x.diagonal(T(1))),
    ("sum_dim", lambda lib, x, T: x.sum(T(1))),
    ("cumsum", lambda lib, x, T: x.cumsum(T(0))),
    ("softmax", lambda lib, x, T: x.softmax(T(1))),
    ("roll", lambda lib, x, T: x.roll(T(1), 0)),
    ("view", lambda lib, x, T: x.reshape(3, 4).view(T(12))),
    ("index_select", lambda lib, x, T: x.index_select(T(1), T(0).reshape(1))),
    ("add_alpha", lambda lib, x, T: lib.add(x, x * 2, alpha=T(2.5))),
    ("sub_alpha_int", lambda lib, x, T: x.sub(x, alpha=T(3))),
    ("addcmul_value", lambda lib, x, T: lib.addcmul(x, x, x, value=T(0.5))),
    ("clamp", lambda lib, x, T: x.clamp(T(-0.5), T(0.5))),
    ("leaky_relu", lambda lib, x, T: _lib_f(lib).leaky_relu(x, T(0.2))),
    ("hardtanh", lambda lib, x, T: _lib_f(lib).hardtanh(x, T(-0.5), T(0.5))),
    ("elu", lambda lib, x, T: _lib_f(lib).elu(x, T(0.7))),
    ("std_correction", lambda lib, x, T: x.std(1, correction=T(0))),
    ("norm_p", lambda lib, x, T: x.norm(T(3.0))),
    ("pow_exponent", lambda lib, x, T: x.pow(T(2.0))),
    ("full", lambda lib, x, T: lib.full((2,), T(3.0), dtype=lib.float64) * x.sum()),
    ("pinv_rtol", lambda lib, x, T: lib.linalg.pinv(x, rtol=T(0.01))),
]


TOL = 1e3 * np.finfo(np.float64).eps  # a few float64 roundings on values of order 1-10


def _pair():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((4, 6))
    e = ember.tensor(base)[:, ::2].detach().requires_grad_(True)  # (4, 3), non-contiguous
    t = to_torch(e.detach()).requires_grad_(True)
    return e, t


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, fn):
    e, t = _pair()
    out_e = fn(ember, e, ember.tensor)
    out_t = fn(torch, t, torch.tensor)
    assert tuple(out_e.shape) == tuple(out_t.shape)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(),
                               rtol=TOL, atol=TOL)
    cot = np.random.default_rng(1).standard_normal(tuple(out_t.shape))
    (g_e,) = ember.autograd.grad(out_e, e, ember.tensor(cot))
    (g_t,) = torch.autograd.grad(out_t, t, torch.tensor(cot))
    np.testing.assert_allclose(g_e.numpy(), g_t.numpy(), rtol=TOL, atol=TOL)


class _Record(DispatchMode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append((func, args, kwargs or {}))
        return func(*args, **(kwargs or {}))


def test_kernels_and_modes_see_numbers_not_tensors():
    x = ember.randn(3, 4, requires_grad=True)
    with _Record() as mode:
        y = x.transpose(ember.tensor(0), 1)
        z = ember.add(x, x, alpha=ember.tensor(2.0))
    calls = {func.name: (args, kwargs) for func, args, kwargs in mode.calls}
    args, kwargs = calls["transpose"][0], calls["add"][1]
    assert args[1:] == (0, 1) and type(args[1]) is int
    assert kwargs["alpha"] == 2.0 and type(kwargs["alpha"]) is float
    (y.sum() + z.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 4.0, np.float32))


def test_tensors_torch_would_not_take_as_numbers_reach_the_kernel_unchanged():
    x = ember.randn(3, 4)
    lo, hi = ember.full((4,), -0.1), ember.full((4,), 0.1)  # 1-d bounds: clamp's Tensor form
    np.testing.assert_array_equal(x.clamp(lo, hi).numpy(), np.clip(x.numpy(), -0.1, 0.1))
    with pytest.raises(TypeError):  # torch: "must be Number, not Tensor"
        torch.add(torch.ones(2), torch.ones(2), alpha=torch.tensor(2.0, requires_grad=True))
    w = ember.tensor(2.0, requires_grad=True)
    with pytest.raises((TypeError, RuntimeError)):
        ember.add(ember.ones(2), ember.ones(2), alpha=w)
    with pytest.raises((TypeError, RuntimeError)):  # torch: "must be int, not Tensor"
        ember.ones(2, 3).transpose(ember.tensor(0.0), 1)


def test_a_value_that_requires_grad_keeps_its_gradient():
    # torch takes a 0-d tensor requiring grad through the op's Tensor form; so does ember
    for lib in (ember, torch):
        x = lib.zeros(2, 3, dtype=lib.float64, requires_grad=True)
        s = lib.ones(2, 2, dtype=lib.float64, requires_grad=True)
        y = x.clone().masked_fill(lib.tensor([True, False, True]), s[0, 1] * 3)
        (gs,) = lib.autograd.grad(y.sum(), s)
        assert gs.tolist() == [[0.0, 12.0], [0.0, 0.0]]


def test_meta_tensors_as_numbers_are_read_on_the_host_only_when_they_have_data():
    x = ember.ones(2, 3, device="meta")
    assert x.transpose(ember.tensor(0), 1).shape == (3, 2)  # a CPU 0-d index on meta data


def test_tensor_methods_are_functions_over_their_operators():
    add = ember.ops.pointwise.add
    assert ember.Tensor.add.__wrapped__ is add and ember.Tensor.__add__ is ember.Tensor.add
    assert ember.Tensor.add.__name__ == "add" and ember.Tensor.add.__doc__ == add.__doc__
    x = ember.ones(2)
    assert ember.Tensor.add(x, x).tolist() == (x + x).tolist() == [2.0, 2.0]
    assert ember.Tensor.transpose.__wrapped__.name == "transpose"
