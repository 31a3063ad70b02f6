"""The backward engine against torch: accumulation, retain_graph, ordering, errors, views."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def both(fn):
    """Run ``fn(lib)`` with ember and torch; return both results."""
    return fn(ember), fn(torch)


def close(a, b, tol=1e-6):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_gradients_from_several_paths_are_summed():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x + x).sum().backward()
        return x.grad
    e, t = both(f)
    close(e, t)


def test_grad_accumulates_across_backward_calls_until_reset():
    def f(lib):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        (x * 3).sum().backward()
        (x * x).sum().backward()
        first = x.grad.clone()
        x.grad = None
        (x * 5).sum().backward()
        return first, x.grad
    (e1, e2), (t1, t2) = both(f)
    close(e1, t1)
    close(e2, t2)


def test_accumulation_keeps_the_same_grad_object():
    x = ember.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    (x * 2).sum().backward()
    assert x.grad is g
    close(x.grad, [4.0, 4.0, 4.0])


def test_second_backward_without_retain_graph_raises():
    x = ember.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*"
                                           "retain_graph=True"):
        y.backward()


def test_retain_graph_allows_second_backward():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad
    e, t = both(f)
    close(e, t)


def test_graph_without_saved_tensors_can_be_replayed():
    x = ember.ones(3, requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    close(x.grad, [2.0, 2.0, 2.0])


def test_implicit_gradient_only_for_scalars():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ember.ones(2).sum().backward()


def test_broadcast_gradients_are_summed_to_input_shape():
    def f(lib):
        a = lib.tensor([[1.0], [2.0]], requires_grad=True)
        b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (a * b).sum().backward()
        return a.grad, b.grad
    (ea, eb), (ta, tb) = both(f)
    close(ea, ta)
    close(eb, tb)


def test_backward_order_is_reverse_creation():
    order = []
    x = ember.ones(2, requires_grad=True)
    a, b, c = x.exp(), x.sin(), x.cos()
    for name, t in (("exp", a), ("sin", b), ("cos", c)):
        t.grad_fn.register_prehook(lambda g, n=name: order.append(n))
    (a + b + c).sum().backward()
    assert order == ["cos", "sin", "exp"]


def test_modified_saved_tensor_raises_version_error():
    a = ember.ones(3, requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[ember.FloatTensor "
                                           r"\[3\]\], which is output 0 of SigmoidBackward0, is "
                                           r"at version 1; expected version 0"):
        b.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[:2].mul_(2)
    with ember.no_grad():
        x.add_(1)
    close(x.detach(), [2.0, 2.0, 2.0])


def test_inplace_on_non_leaf_rewrites_grad_fn():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.mul_(3)
        (y * y).sum().backward()
        return x.grad, type(y.grad_fn).__name__
    (eg, en), (tg, tn) = both(f)
    close(eg, tg)
    assert en == tn == "MulBackward0"


def test_inplace_on_view_rebases_base_history():
    def f(lib):
        a = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        b = a * 1
        v = b[1:3]
        v.mul_(2)
        b.sum().backward()
        return a.grad, type(b.grad_fn).__name__
    (eg, en), (tg, tn) = both(f)
    close(eg, tg)
    assert en == tn == "CopySlices"


def test_setitem_with_requires_grad_value():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = lib.tensor([5.0, 6.0], requires_grad=True)
        h = x * 2
        h[1:] = w * w
        (h * lib.tensor([1.0, 10.0, 100.0])).sum().backward()
        return x.grad, w.grad
    (ex, ew), (tx, tw) = both(f)
    close(ex, tx)
    close(ew, tw)


def test_inplace_through_transposed_view_row():
    def f(lib):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        h = x * 1
        h.t()[1].mul_(3)
        (h * h).sum().backward()
        return x.grad
    e, t = both(f)
    close(e, t)


def test_view_of_base_sees_rebased_history():
    def f(lib):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = a * 2
        v = base[:2]
        v.add_(lib.tensor([10.0, 20.0], requires_grad=False))
        out = (v * v).sum() + base.sum()
        out.backward()
        return a.grad
    e, t = both(f)
    close(e, t)


def test_multi_output_view_inplace_raises():
    x = ember.ones(4, requires_grad=True) * 1
    a, b = x.split(2)
    with pytest.raises(RuntimeError, match="returns multiple views"):
        a.mul_(2)


def test_no_grad_view_modified_inplace_with_grad_raises():
    x = ember.ones(4, requires_grad=True) * 1
    with ember.no_grad():
        v = x[:2]
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        v.mul_(2)


def test_autograd_grad_does_not_touch_grad_and_reports_unused():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([3.0], requires_grad=True)
    out = (x * x).sum()
    (gx,) = ember.autograd.grad(out, x, retain_graph=True)
    close(gx, [2.0, 4.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(out, (x, y), retain_graph=True)
    gx, gy = ember.autograd.grad(out, (x, y), retain_graph=True, allow_unused=True)
    assert gy is None
    gx, gy = ember.autograd.grad(out, (x, y), materialize_grads=True)
    close(gy, [0.0])


def test_grad_of_non_leaf_input():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        out = (h * h).sum()
        return lib.autograd.grad(out, h)[0]
    e, t = both(f)
    close(e, t)


def test_backward_inputs_restricts_accumulation():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([3.0, 4.0], requires_grad=True)
    (x * y).sum().backward(inputs=[x])
    close(x.grad, [3.0, 4.0])
    assert y.grad is None


def test_create_graph_gives_second_derivatives():
    def f(lib):
        x = lib.tensor([2.0], requires_grad=True)
        (g,) = lib.autograd.grad((x * x * x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg
    (eg, egg), (tg, tgg) = both(f)
    close(eg, tg)
    close(egg, tgg)
    x = ember.tensor([2.0], requires_grad=True)
    (g,) = ember.autograd.grad((x * x * x).sum(), x, create_graph=True)
    assert g.grad_fn is not None


def test_hessian_vector_product_matches_torch():
    def f(lib):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        v = lib.tensor([1.0, 2.0, 3.0])
        y = (x.sin() * x.exp()).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (hv,) = lib.autograd.grad((g * v).sum(), x)
        return hv
    e, t = both(f)
    close(e, t, 1e-5)


def test_dynamic_graph_depends_on_data():
    def f(lib):
        grads = []
        for seed in range(3):
            rng = np.random.default_rng(seed)
            w = lib.tensor(rng.standard_normal(4).tolist(), requires_grad=True)
            x = lib.tensor(rng.standard_normal(4).tolist())
            h = x
            steps = int(abs(float(x.sum())) * 2) + 1
            for _ in range(steps):
                h = (h * w).tanh()
            if float(h.sum()) > 0:
                h = h * 2
            h.sum().backward()
            grads.append(w.grad)
        return grads
    es, ts = both(f)
    for e, t in zip(es, ts):
        close(e, t, 1e-5)


def test_integer_outputs_never_require_grad():
    x = ember.tensor([1.0, 3.0, 2.0], requires_grad=True)
    assert not x.argmax().requires_grad
    assert not (x > 1).requires_grad
    v, i = x.max(0)
    assert v.requires_grad and not i.requires_grad


def test_returned_gradient_shape_validation():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ember.ones(5)

    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0"):
        Bad.apply(x).sum().backward()


def test_derivative_not_implemented_raises_clearly():
    lib = ember.library.Library("gradtest", "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x.detach() * 2, "CPU")
        x = ember.ones(2, requires_grad=True)
        y = ember.ops.gradtest.twice(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="derivative for gradtest::twice is not "
                                               "implemented"):
            y.sum().backward()
    finally:
        lib._destroy()


def test_saved_values_are_inspectable_on_grad_fn():
    def f(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 3).exp()
        return y.grad_fn._saved_result, y
    (e_saved, ey), (t_saved, _) = f(ember), f(torch)
    close(e_saved, t_saved)
    ey.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = ey.grad_fn._saved_result
