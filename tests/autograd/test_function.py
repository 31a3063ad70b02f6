"""Custom autograd.Function against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def close(a, b, tol=1e-6):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def legendre_p3(lib):
    class LegendrePolynomial3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x ** 2 - 1)

    return LegendrePolynomial3


@pytest.mark.parametrize("create_graph", [False, True])
def test_legendre_function_matches_torch(create_graph):
    results = []
    for lib in (ember, torch):
        P3 = legendre_p3(lib)
        x = lib.tensor([0.1, -0.5, 0.9], requires_grad=True)
        y = P3.apply(x) + P3.apply(x * 2)  # used twice in one graph
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=create_graph)
        results.append(g)
        assert type(y.grad_fn).__name__ == "AddBackward0"
    close(*results)


def test_function_under_no_grad_returns_plain_tensor():
    P3 = legendre_p3(ember)
    x = ember.tensor([0.3], requires_grad=True)
    with ember.no_grad():
        y = P3.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_grad_fn_name_and_needs_input_grad():
    seen = {}

    class Mul(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            ctx.k = k
            seen["needs"] = ctx.needs_input_grad
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b * ctx.k, g * a * ctx.k, None

    a = ember.tensor([2.0], requires_grad=True)
    b = ember.tensor([3.0])
    y = Mul.apply(a, b, 4)
    assert type(y.grad_fn).__name__ == "MulBackward"
    assert seen["needs"] == (True, False, False)
    y.backward()
    close(a.grad, [12.0])


def test_wrong_number_of_gradients_raises():
    class Two(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return (g,)

    a = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Two.apply(a, a).sum().backward()


def test_extra_none_gradients_are_accepted():
    class One(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    a = ember.ones(2, requires_grad=True)
    One.apply(a).sum().backward()
    close(a.grad, [2.0, 2.0])


def test_save_for_backward_rejects_non_tensors():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, 3)
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        Bad.apply(ember.ones(1, requires_grad=True))


def test_mark_dirty_inplace_function():
    results = []
    for lib in (ember, torch):
        class AddOneInplace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        h = a * 3
        out = AddOneInplace.apply(h)
        assert out is h
        (out * out).sum().backward()
        results.append(a.grad)
    close(*results)


def test_mark_non_differentiable_and_materialize_grads():
    received = {}

    class SortLike(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = ember.tensor([1.0, 0.0])
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            received["g_idx"] = g_idx
            return g * 2

    x = ember.ones(2, requires_grad=True)
    y, idx = SortLike.apply(x)
    assert y.requires_grad and not idx.requires_grad
    y.sum().backward()
    close(received["g_idx"], [0.0, 0.0])

    class NoMaterialize(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            received["g2"] = g2
            return g1 * 2

    x = ember.ones(2, requires_grad=True)
    a, _ = NoMaterialize.apply(x)
    a.sum().backward()
    assert received["g2"] is None


def test_once_differentiable_forbids_double_backward():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        @ember.autograd.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = ember.tensor([2.0], requires_grad=True)
    seed = ember.ones(1, requires_grad=True)  # a differentiable grad_output: torch wraps too
    (g,) = ember.autograd.grad(Cube.apply(x), x, seed, create_graph=True)
    close(g, [12.0])
    with pytest.raises(RuntimeError, match="trying to differentiate twice"):
        g.sum().backward()


def test_setup_context_style():
    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    x = ember.tensor([0.0, 1.0], requires_grad=True)
    Exp.apply(x).sum().backward()
    close(x.grad, np.exp([0.0, 1.0]))


def test_returning_an_input_gives_a_view():
    class Ident(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = ember.ones(2, requires_grad=True)
    y = Ident.apply(x)
    assert y is not x and y._base is x
    y.sum().backward()
    close(x.grad, [1.0, 1.0])


def test_saved_tensors_freed_after_backward():
    P3 = legendre_p3(ember)
    x = ember.tensor([0.5], requires_grad=True)
    y = P3.apply(x)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = y.grad_fn.saved_tensors
