"""Custom differentiable functions: ``ember.autograd.Function``.

``apply`` runs ``forward`` with grad disabled and, when an input requires grad, makes the
context object itself the outputs' ``grad_fn`` (a ``<Name>Backward`` node), exactly like
PyTorch's ``BackwardCFunction``: ``ctx.save_for_backward``, ``ctx.saved_tensors``,
``needs_input_grad``, ``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``.
"""

from __future__ import annotations

import functools
import warnings

from ember.autograd import anomaly
from ember.autograd._ops import op as aten
from ember.autograd.grad_mode import _grad, no_grad
from ember.autograd.graph import Node, SavedTensor, gradient_edge
from ember.autograd.kernel import _check_inplace, mark_requires_grad
from ember.tensor import Tensor, make_view

__all__ = ["Function", "FunctionCtx", "once_differentiable", "BackwardCFunction"]


class FunctionCtx:
    """State shared between ``forward`` and ``backward`` of a custom Function.

    Example:
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return grad * 2 * x
        >>> x = ember.tensor([3.0], requires_grad=True)
        >>> Square.apply(x).backward()
        >>> x.grad
        tensor([6.])
    """

    def save_for_backward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one custom-Function call; it is also that call's ``ctx``."""

    _forward_cls: type = None

    def __init__(self):
        Node.__init__(self)
        self._to_save = ()
        self._saved = None
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize_grads = True
        self.needs_input_grad = ()
        self._is_tensor_input = ()
        self._out_meta = ()

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is None:
            if self._released:
                from ember.autograd.kernel import _RELEASED
                raise RuntimeError(_RELEASED)
            return ()
        return tuple(s.unpack(self.name()) if s is not None else None for s in self._saved)

    saved_variables = saved_tensors

    def apply(self, grads: tuple) -> tuple:
        if self._materialize_grads:
            grads = tuple(g if g is not None else aten("zeros")(m[0], dtype=m[1])
                          for g, m in zip(grads, self._out_meta))
        cls = self._forward_cls
        if not _has_own(cls, "backward") and not _has_own(cls, "vjp"):
            raise NotImplementedError("You must implement either the backward or vjp method "
                                      "for your custom autograd.Function to use it with "
                                      "backward mode AD.")
        result = cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_inputs = len(self._is_tensor_input)
        if len(result) != n_inputs:
            extra = result[n_inputs:]
            if len(result) < n_inputs or any(r is not None for r in extra):
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n_inputs}, got {len(result)})")
            result = result[:n_inputs]
        out = []
        for i, (g, is_t) in enumerate(zip(result, self._is_tensor_input)):
            if not is_t:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different "
                                       f"than None at position {i + 1}, but the corresponding "
                                       "forward input was not a Variable")
                continue
            out.append(g)
        return tuple(out)

    def release_variables(self) -> None:
        self._saved = None
        self._released = True


def _has_own(cls, name: str) -> bool:
    return any(name in vars(k) for k in cls.__mro__ if k is not Function and k is not object)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable operations.

    Subclasses define static ``forward(ctx, *args)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grad_outputs)``, then call
    ``Cls.apply(*args)``.

    Example:
        >>> import ember
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> x = ember.tensor([3.0], requires_grad=True)
        >>> Square.apply(x).backward(); x.grad
        tensor([6.])
    """

    def __init__(self, *args, **kwargs):
        warnings.warn("Legacy autograd function with non-static forward method is deprecated. "
                      "Please use new-style autograd function with static forward method.",
                      DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: https://pytorch.org/docs/stable/autograd"
                           ".html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        ctx._is_tensor_input = is_tensor
        requires = _grad.enabled and any(t and a.requires_grad for t, a in zip(is_tensor, args))
        ctx.needs_input_grad = tuple(t and a.requires_grad for t, a in zip(is_tensor, args))
        uses_setup = "setup_context" in _own_attrs(cls)
        with no_grad():
            if uses_setup:
                output = cls.forward(*args, **kwargs)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if uses_setup:
            cls.setup_context(ctx, args, output)
        if not requires:
            return output
        return _wrap_outputs(ctx, args, output)


def _own_attrs(cls) -> set:
    names = set()
    for k in cls.__mro__:
        if k is Function:
            break
        names |= set(vars(k))
    return names


def _wrap_outputs(ctx: BackwardCFunction, args: tuple, output):
    inputs = [a for a in args if isinstance(a, Tensor)]
    ctx.next_functions = tuple(gradient_edge(t) or (None, 0) for t in inputs)
    ctx._in_meta = tuple((t._shape, t._dtype) for t in inputs)
    if anomaly._state.enabled:
        anomaly.record_stack(ctx)
    single = not isinstance(output, tuple)
    outs = (output,) if single else output
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_differentiable}
    input_ids = {id(t) for t in inputs}
    wrapped = []
    ctx._num_outputs = len(outs)
    ctx._out_meta = tuple((o._shape, o._dtype) if isinstance(o, Tensor) else ((), None)
                          for o in outs)
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            wrapped.append(o)
            continue
        if id(o) in dirty:
            _check_inplace(ctx.name(), o)
            mark_requires_grad(o, ctx, i)
        elif id(o) in non_diff or not o._dtype.is_differentiable:
            pass
        else:
            if id(o) in input_ids:
                o = make_view(o, o._shape, o._stride, o._offset)
            mark_requires_grad(o, ctx, i)
        wrapped.append(o)
    for t in ctx._dirty:
        if id(t) not in input_ids:
            warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only "
                          "input Tensors that have been modified in-place should be passed to "
                          "ctx.mark_dirty().", UserWarning, stacklevel=3)
    outputs = {id(w) for w in wrapped}
    ctx._saved = tuple(None if t is None else SavedTensor(t, ctx, is_output=id(t) in outputs)
                       for t in ctx._to_save)
    ctx._to_save = ()
    return wrapped[0] if single else tuple(wrapped)


class _DelayedErrorNode(Node):
    __slots__ = ("msg",)

    def apply(self, grads):
        raise RuntimeError(self.msg)


def once_differentiable(fn):
    """Decorate ``backward``: it runs without grad, and differentiating it again raises.

    Example:
        >>> class Double(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     @ember.autograd.function.once_differentiable
        ...     def backward(ctx, grad):
        ...         return grad * 2
        >>> x = ember.ones(2, requires_grad=True)
        >>> Double.apply(x).sum().backward()
        >>> x.grad
        tensor([2., 2.])
    """

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _grad.enabled:
            return outputs
        requires = any(isinstance(a, Tensor) and a.requires_grad for a in args)
        if not requires:
            return outputs
        tup = outputs if isinstance(outputs, tuple) else (outputs,)
        node = _DelayedErrorNode()
        node.msg = ("trying to differentiate twice a function that was marked with "
                    "@once_differentiable")
        grads_in = [a for a in args if isinstance(a, Tensor)]
        node.next_functions = tuple(gradient_edge(t) or (None, 0) for t in grads_in)
        node._in_meta = tuple((t._shape, t._dtype) for t in grads_in)
        out = []
        for i, o in enumerate(tup):
            if isinstance(o, Tensor) and o._dtype.is_differentiable:
                o = o.detach()
                mark_requires_grad(o, node, i)
            out.append(o)
        return tuple(out) if isinstance(outputs, tuple) else out[0]

    return wrapper
