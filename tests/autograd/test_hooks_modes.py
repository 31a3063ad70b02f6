"""Hooks, callbacks, saved-tensor hooks, grad modes, inference mode, anomaly, tools."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def close(a, b, tol=1e-6):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _hook_order(lib):
    log = []
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.register_hook(lambda g: log.append("tensor_hook_b1"))
    b.register_hook(lambda g: log.append("tensor_hook_b2"))
    b.grad_fn.register_prehook(lambda g: log.append("node_prehook"))
    b.grad_fn.register_hook(lambda gi, go: log.append("node_posthook"))
    a.register_hook(lambda g: log.append("tensor_hook_a"))
    a.register_post_accumulate_grad_hook(lambda p: log.append("post_acc_a"))

    def cb():
        log.append("final_callback")

    def queue(g):
        if lib is torch:
            torch.autograd.Variable._execution_engine.queue_callback(cb)
        else:
            ember.autograd.graph.queue_callback(cb)

    b.register_hook(queue)
    b.sum().backward()
    return log


def test_hook_order_matches_torch():
    assert _hook_order(ember) == _hook_order(torch)


def test_hook_replaces_gradient_and_handle_removes_it():
    x = ember.ones(3, requires_grad=True)
    h = x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    close(x.grad, [20.0] * 3)
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    close(x.grad, [2.0] * 3)


def test_retain_grad_runs_after_tensor_hooks():
    def f(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 3
        b.retain_grad()
        b.register_hook(lambda g: g * 100)
        (b * b).sum().backward()
        return b.grad, a.grad
    (eb, ea), (tb, ta) = f(ember), f(torch)
    close(eb, tb)
    close(ea, ta)


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        ember.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on "
                                           "non-leaf tensors"):
        (ember.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(print)


def test_queue_callback_outside_backward_raises():
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                           "backward pass."):
        ember.autograd.graph.queue_callback(lambda: None)


def test_saved_tensors_hooks_pack_and_unpack():
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.clone()

    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t * 2):
        y = (x * x).sum()
    assert packed == [(3,), (3,)]
    y.backward()
    close(x.grad, [4.0, 8.0, 12.0])  # each saved x was doubled on unpack


def test_disable_saved_tensors_hooks():
    x = ember.ones(2, requires_grad=True)
    with ember.autograd.graph.disable_saved_tensors_hooks("no saving here"):
        with pytest.raises(RuntimeError, match="no saving here"):
            x * x
        x + 1  # saves nothing


def test_save_on_cpu_gives_same_gradients():
    x = ember.tensor([0.5, 1.5], requires_grad=True)
    with ember.autograd.graph.save_on_cpu():
        y = (x.exp() * x).sum()
    y.backward()
    close(x.grad, np.exp([0.5, 1.5]) * (1 + np.array([0.5, 1.5])))


def test_no_grad_enable_grad_set_grad_enabled():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    ember.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()


def test_grad_mode_is_thread_local():
    import threading
    seen = []
    with ember.no_grad():
        t = threading.Thread(target=lambda: seen.append(ember.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_inference_mode_tensors_cannot_enter_autograd():
    x = ember.ones(3, requires_grad=True)
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled()
        y = x * 2
        assert y.is_inference() and not y.requires_grad
    assert not ember.is_inference_mode_enabled()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        x * y
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside "
                                           "InferenceMode is not allowed"):
        y.add_(1)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor "
                                           "outside InferenceMode is not allowed"):
        y.requires_grad_()
    assert not y.clone().is_inference()
    with ember.inference_mode():
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled()
            assert (x * 2).requires_grad


def test_eval_does_not_mean_no_grad():
    x = ember.ones(2, requires_grad=True)
    assert (x * 2).requires_grad


def test_detect_anomaly_reports_nan_in_backward():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with ember.autograd.detect_anomaly():
            y = x.sqrt()
            z = (y * 0).sum()
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan "
                                                   "values in its 0th output."):
                with pytest.warns(RuntimeWarning, match="Error detected in SqrtBackward0"):
                    z.backward()


def test_to_dot_names_nodes_and_leaves():
    w = ember.ones(2, 3, requires_grad=True)
    x = ember.ones(3)
    y = (w * x).sum()
    dot = ember.autograd.graph.to_dot(y, {"w": w})
    assert dot.startswith("digraph")
    assert "SumBackward0" in dot and "MulBackward0" in dot and 'label="w\\n(2x3)"' in dot
    assert "(3)" in dot  # the saved x's shape


def test_gradcheck_detects_wrong_backward():
    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2x g

    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch"):
        ember.autograd.gradcheck(Wrong.apply, (x,))
    assert not ember.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)
    assert ember.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
    assert ember.autograd.gradgradcheck(lambda t: (t * t).sin(), (x,))


def test_functional_jacobian_hessian_vjp_jvp_hvp():
    def f(lib):
        def fn(x):
            return (x * x).sin()

        def scalar(x):
            return (x.exp() * x).sum()

        x = lib.tensor([0.3, -0.7], dtype=lib.float64)
        v = lib.tensor([1.0, 2.0], dtype=lib.float64)
        F = lib.autograd.functional
        return (F.jacobian(fn, x), F.hessian(scalar, x), F.vjp(fn, x, v)[1],
                F.jvp(fn, x, v)[1], F.hvp(scalar, x, v)[1])
    for e, t in zip(f(ember), f(torch)):
        close(e, t, 1e-6)


def test_leaf_and_intermediate_hooks_run_once_per_backward():
    calls = {"x": 0, "h": 0}
    x = ember.ones(3, requires_grad=True)
    x.register_hook(lambda g: calls.__setitem__("x", calls["x"] + 1))
    h = x * 2
    h.register_hook(lambda g: calls.__setitem__("h", calls["h"] + 1))
    (h * h).sum().backward()
    assert calls == {"x": 1, "h": 1}
    (x * 3).sum().backward()
    assert calls == {"x": 2, "h": 1}
