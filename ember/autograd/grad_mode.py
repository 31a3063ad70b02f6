"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Grad mode is a thread-local flag the autograd kernels read: off, they record nothing (the
dispatch keys are untouched, as in PyTorch). Inference mode goes further: it excludes the
autograd and ADInplaceOrView keys for the thread and marks every tensor created inside as an
inference tensor, which may never enter autograd later.
"""

from __future__ import annotations

import functools
import inspect
import threading

from ember.dispatch import dispatcher
from ember.dispatch.keys import AUTOGRAD_MASK, DispatchKey

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "grad_state"]


class _GradState(threading.local):
    def __init__(self):
        self.enabled = True


_grad = _GradState()


def grad_state() -> _GradState:
    """The calling thread's grad-mode state (``enabled``)."""
    return _grad


def is_grad_enabled() -> bool:
    """Whether autograd records operations on this thread (``torch.is_grad_enabled``).

    Example:
        >>> ember.is_grad_enabled()
        True
        >>> with ember.no_grad():
        ...     print(ember.is_grad_enabled())
        False
    """
    return _grad.enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode``.

    Example:
        >>> with ember.inference_mode():
        ...     print(ember.is_inference_mode_enabled())
        True
    """
    return dispatcher.dispatch_state().inference


class _DecoratorContextManager:
    """A context manager that also works as a decorator (functions and generators)."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError("grad-mode context managers cannot decorate classes")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording inside the block (context manager or decorator).

    Example:
        >>> import ember
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __enter__(self):
        self.prev = _grad.enabled
        _grad.enabled = False

    def __exit__(self, *exc):
        _grad.enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Enable gradient recording inside the block (e.g. within ``no_grad``).

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad():
        ...     with ember.enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
    """

    def __enter__(self):
        self.prev = _grad.enabled
        _grad.enabled = True

    def __exit__(self, *exc):
        _grad.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode``: immediately as a function, or for a block as a context.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.set_grad_enabled(False):
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __init__(self, mode: bool):
        self.prev = _grad.enabled
        self.mode = bool(mode)
        _grad.enabled = self.mode

    def __enter__(self):
        _grad.enabled = self.mode

    def __exit__(self, *exc):
        _grad.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


_INFERENCE_EXCLUDED = AUTOGRAD_MASK | (1 << DispatchKey.ADInplaceOrView)


class inference_mode(_DecoratorContextManager):
    """No autograd, no version counting: tensors made inside are inference tensors.

    ``inference_mode(False)`` inside an enabled block turns it off again.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.inference_mode():
        ...     y = x * 2
        >>> y.requires_grad, y.is_inference()
        (False, True)
    """

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        st = dispatcher.dispatch_state()
        self.prev = (st.inference, st.keep, _grad.enabled)
        if self.mode:
            st.inference = True
            st.keep &= ~_INFERENCE_EXCLUDED
            _grad.enabled = False
        else:
            st.inference = False
            st.keep |= _INFERENCE_EXCLUDED
            _grad.enabled = True

    def __exit__(self, *exc):
        st = dispatcher.dispatch_state()
        st.inference, st.keep, _grad.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)
