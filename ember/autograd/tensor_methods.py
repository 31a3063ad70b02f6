"""Autograd's methods on ``Tensor``: backward, hooks, retain_grad, detach_."""

from __future__ import annotations

import weakref

from ember.autograd.engine import backward as _backward
from ember.autograd.graph import RemovableHandle, _HookDict
from ember.tensor import Tensor

__all__ = ["bind"]


def backward(self: Tensor, gradient=None, retain_graph=None, create_graph: bool = False,
             inputs=None) -> None:
    """Accumulate the gradient of this tensor into the leaves' ``.grad``.

    ``gradient`` may be omitted only for a one-element tensor (implicitly 1).

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * x
        >>> y.backward(ember.tensor([1.0, 0.5]))  # non-scalar outputs need a gradient
        >>> x.grad
        tensor([2., 2.])
    """
    _backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self: Tensor, hook) -> RemovableHandle:
    """``hook(grad) -> Tensor | None`` runs when this tensor's gradient is computed; a returned
    tensor replaces the gradient.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> handle = x.register_hook(lambda grad: grad * 2)
        >>> (x * 3).sum().backward(); x.grad
        tensor([6., 6.])
        >>> handle.remove()
    """
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        return self.grad_fn._add_tensor_pre_hook(self._output_nr, hook)
    # A leaf keeps its own hooks: its AccumulateGrad node may be recreated by later graphs.
    if self._hooks is None:
        self._hooks = _HookDict()
    handle = RemovableHandle(self._hooks)
    self._hooks[handle.id] = hook
    return handle


def register_post_accumulate_grad_hook(self: Tensor, hook) -> RemovableHandle:
    """``hook(tensor)`` runs after this leaf's ``.grad`` has been updated.

    Example:
        >>> w = ember.ones(2, requires_grad=True)
        >>> seen = []
        >>> _ = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
        >>> (w * 3).sum().backward(); seen
        [[3.0, 3.0]]
    """
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._post_hooks is None:
        self._post_hooks = _HookDict()
    handle = RemovableHandle(self._post_hooks)
    self._post_hooks[handle.id] = hook
    return handle


def retain_grad(self: Tensor) -> None:
    """Populate ``.grad`` for this non-leaf tensor during backward.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x * 2
        >>> y.retain_grad()
        >>> (y * y).sum().backward(); y.grad
        tensor([4., 4.])
    """
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self._retains_grad:
        return
    ref = weakref.ref(self)

    def store(grad):
        t = ref()
        if t is None:
            return
        if t.grad is None:
            t.grad = grad.detach().clone() if grad.grad_fn is None else grad.clone()
        else:
            t.grad = t.grad + grad

    node = self.grad_fn
    if node._retain_hooks is None:
        node._retain_hooks = {}
    node._retain_hooks[self._output_nr] = store
    self._retains_grad = True


def retains_grad(self: Tensor) -> bool:
    """Whether ``retain_grad()`` was called on this non-leaf tensor.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x * 2
        >>> y.retains_grad, (y.retain_grad(), y.retains_grad)[1]
        (False, True)
    """
    return self._retains_grad


def detach_(self: Tensor) -> Tensor:
    """Detach this tensor from the graph in place (it becomes a leaf).

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x * 2
        >>> y.detach_() is y, y.requires_grad, y.grad_fn is None
        (True, False, True)
    """
    if self._base is not None and self._base.requires_grad:
        raise RuntimeError("Can't detach views in-place. Use detach() instead.")
    self.grad_fn = None
    self._requires_grad = False
    self._mkey = None
    return self


def bind() -> None:
    """Attach the methods above to ``Tensor``."""
    Tensor.backward = backward
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(retains_grad)
    Tensor.detach_ = detach_
