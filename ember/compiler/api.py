"""The public entry points: ``compile``, ``disable``, ``allow_in_graph``, ``reset``.

``compile(fn)`` returns a wrapper that hands every call to the driver
(``driver.run_frame(ctx, fn, args, kwargs)``), which looks up or captures compiled segments
in the wrapper's own ``CompileContext``. ``compile(module)`` returns an ``OptimizedModule``
that runs the module's ``forward`` the same way (guards on the module notice ``train()``,
``eval()`` and parameter swaps). This module knows nothing about bytecode.
"""

from __future__ import annotations

import functools
import inspect
import weakref

import ember.compiler.explain  # noqa: F401 - the module (the package exports a function too)
from ember.compiler.backends import lookup_backend
from ember.compiler.cache import CompileContext
from ember.compiler.config import default_backend
from ember.compiler.exc import CompileError
from ember.nn.modules.module import Module

__all__ = ["NotCallableError", "compile", "disable", "allow_in_graph", "reset", "is_compiling",
           "OptimizedModule", "compile_module_in_place", "is_disabled", "is_allowed_in_graph"]

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "lite")
_CONTEXTS: weakref.WeakSet = weakref.WeakSet()
_ALLOWED: dict[int, object] = {}


class NotCallableError(TypeError, AssertionError):
    """``ember.compile`` was given something that cannot be called.

    Example:
        >>> try:
        ...     ember.compile(42)
        ... except ember.compiler.NotCallableError as e:
        ...     print(type(e).__name__, isinstance(e, TypeError))
        NotCallableError True
    """


def _run_frame():
    """The driver's entry point, or None while the capture side is not installed."""
    try:
        from ember.compiler.driver import run_frame
    except ImportError:
        return None
    return run_frame


def _eager_call(ctx: CompileContext, fn, args, kwargs):
    if not ctx.warned_no_driver:
        ctx.warned_no_driver = True
        _events().record_native(getattr(fn, "__qualname__", repr(fn)),
                             "bytecode capture is not available; running eagerly")
    return fn(*args, **kwargs)


def _check_options(model, backend, fullgraph, dynamic, mode, options) -> None:
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"ember.compile: fullgraph must be a bool; got {fullgraph!r}")
    if dynamic not in (None, True, False):
        raise TypeError(f"ember.compile: dynamic must be None, True or False; got {dynamic!r}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"ember.compile: options must be a dict; got {type(options).__name__}")
    lookup_backend(default_backend() if backend == "inductor" else backend)
    if inspect.isgeneratorfunction(model) or inspect.iscoroutinefunction(model):
        return  # runs natively; the driver reports why


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend="inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False):
    """Compile a function or ``nn.Module`` (``torch.compile``).

    The result behaves like ``model``; on each call its bytecode is captured into graphs
    guarded by what the capture relied on (tensor metadata, constants, identities, module
    structure, grad mode), compiled by ``backend`` and reused while the guards hold.

    Args:
        model: a function or ``nn.Module``; omitted, ``compile`` returns a decorator.
        fullgraph: raise ``GraphBreakError`` instead of breaking the graph.
        dynamic: ``None`` (specialise, then mark dims that change dynamic), ``True`` or
            ``False`` (specialise on every shape).
        backend: ``"inductor"`` (default: ``ember.compiler.config.default_backend()``),
            ``"c"`` (fused C kernels), ``"numpy"``, ``"eager"``, or a callable
            ``(graph_module, example_inputs) -> callable``.
        mode: torch's mode names are accepted and change nothing yet.
        options: backend options (a dict).
        disable: return ``model`` unchanged.

    Returns:
        The compiled callable (for a module, an ``OptimizedModule``).

    Raises:
        NotCallableError: ``model`` is not callable (a TypeError, and an AssertionError as
            torch raises).
        RuntimeError: an unknown ``mode``, or both ``mode`` and ``options``.
        ValueError: an unknown backend name.

    Example:
        >>> import ember
        >>> f = compile(lambda x: (x + 1).relu())
        >>> f(ember.tensor([-2.0, 3.0]))
        tensor([0., 4.])
    """
    if model is None:
        def deco(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, disable=disable)
        return deco
    if not callable(model):
        raise NotCallableError(f"ember.compile: a callable function or nn.Module is expected, "
                               f"but {type(model)} is provided.")
    _check_options(model, backend, fullgraph, dynamic, mode, options)
    if disable:
        return model
    ctx = CompileContext(default_backend() if backend == "inductor" else backend, fullgraph,
                         dynamic, mode, options)
    ctx.warned_no_driver = False
    _CONTEXTS.add(ctx)
    if isinstance(model, Module):
        return OptimizedModule(model, ctx)
    return _wrap_function(model, ctx)


def _wrap_function(fn, ctx: CompileContext):
    run = _run_frame()
    target, bound = fn, ()
    if inspect.ismethod(fn):
        target, bound = fn.__func__, (fn.__self__,)
    if run is None:
        def compiled(*args, **kwargs):
            return _eager_call(ctx, fn, args, kwargs)
    elif bound:
        self_ = bound[0]

        def compiled(*args, **kwargs):
            return run(ctx, target, (self_, *args), kwargs)
    else:
        def compiled(*args, **kwargs):
            return run(ctx, target, args, kwargs)
    try:
        functools.update_wrapper(compiled, fn)
    except (AttributeError, TypeError):
        pass
    compiled._ember_ctx = ctx
    compiled._torchdynamo_orig_callable = fn
    compiled._orig_fn = fn
    return compiled


class OptimizedModule:
    """A compiled ``nn.Module`` (``torch._dynamo.OptimizedModule``): calling it runs the
    module's ``forward`` through the compiler; other attributes are the module's own.

    ``_orig_mod`` is the wrapped module.

    Example:
        >>> layer = ember.nn.Linear(2, 2)
        >>> compiled = ember.compile(layer, backend="eager")
        >>> type(compiled).__name__, compiled._orig_mod is layer, compiled.weight is layer.weight
        ('OptimizedModule', True, True)
        >>> compiled(ember.ones(1, 2)).shape
        ember.Size([1, 2])
    """

    def __init__(self, mod: Module, ctx: CompileContext):
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_ember_ctx", ctx)
        object.__setattr__(self, "_forward", _wrap_function(type(mod).forward, ctx))

    def __call__(self, *args, **kwargs):
        mod = self._orig_mod
        if mod._forward_hooks or mod._forward_pre_hooks or mod._backward_hooks or \
                mod._backward_pre_hooks:
            # hooks run eagerly around the compiled forward
            with _ForwardSwap(mod, self._forward):
                return mod(*args, **kwargs)
        return self._forward(mod, *args, **kwargs)

    forward = __call__

    def __getattr__(self, name: str):
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._orig_mod, name, value)

    def __repr__(self) -> str:
        return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)"


class _ForwardSwap:
    def __init__(self, mod: Module, fwd):
        self.mod, self.fwd = mod, fwd

    def __enter__(self):
        object.__setattr__(self.mod, "forward", functools.partial(self.fwd, self.mod))

    def __exit__(self, *exc):
        self.mod.__dict__.pop("forward", None)


def compile_module_in_place(module: Module, *args, **kwargs) -> None:
    """``nn.Module.compile()``: later calls of ``module`` run its forward compiled."""
    compiled = compile(type(module).forward, *args, **kwargs)
    object.__setattr__(module, "forward", functools.partial(compiled, module))
    object.__setattr__(module, "_compiled_forward", compiled)


def disable(fn=None, recursive: bool = True):
    """Run ``fn`` without compiling it, even when called from compiled code
    (``torch.compiler.disable``); the call is a graph break there.

    Usable as ``@disable`` or ``disable(fn)``.

    Example:
        >>> @ember.compiler.disable
        ... def helper(x):
        ...     return x + 1  # runs eagerly, a graph break inside compiled code
        >>> f = ember.compile(lambda x: helper(x * 2), backend="eager")
        >>> f(ember.ones(2))
        tensor([3., 3.])
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive)

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        return fn(*args, **kwargs)

    disabled._ember_compiler_disabled = True
    return disabled


def is_disabled(fn) -> bool:
    """Whether ``fn`` was wrapped by :func:`disable` (the capture never inlines it)."""
    return bool(getattr(fn, "_ember_compiler_disabled", False))


def allow_in_graph(fn):
    """Record calls of ``fn`` as one graph node instead of inlining its bytecode
    (``torch.compiler.allow_in_graph``). ``fn`` must take and return tensors and be runnable
    on meta tensors; the backends call it on real tensors.

    Example:
        >>> def scaled(x):
        ...     return x * 3
        >>> scaled = ember.compiler.allow_in_graph(scaled)  # one graph node, not inlined
        >>> ember.compile(lambda x: scaled(x) + 1, backend="eager")(ember.ones(2))
        tensor([4., 4.])
    """
    _ALLOWED[id(fn)] = fn
    try:
        fn._ember_allow_in_graph = True
    except (AttributeError, TypeError):
        pass
    return fn


def is_allowed_in_graph(fn) -> bool:
    """Whether ``fn`` was registered with :func:`allow_in_graph`."""
    return _ALLOWED.get(id(fn)) is fn


def reset() -> None:
    """Forget every compiled entry of every compiled function (``torch._dynamo.reset``).

    Example:
        >>> f = ember.compile(lambda x: x - 1, backend="eager")
        >>> f(ember.ones(2))
        tensor([0., 0.])
        >>> ember.compiler.reset()  # the next call compiles again
        >>> f(ember.ones(2))
        tensor([0., 0.])
    """
    for ctx in list(_CONTEXTS):
        ctx.reset()
    try:
        from ember.compiler import driver
    except ImportError:
        return
    hook = getattr(driver, "reset", None)
    if hook is not None:
        hook()


def is_compiling() -> bool:
    """Whether the caller runs inside compiled-code capture (``torch.compiler.is_compiling``).

    Example:
        >>> ember.compiler.is_compiling()  # outside compiled code
        False
    """
    try:
        from ember.compiler import driver
    except ImportError:
        return False
    fn = getattr(driver, "is_compiling", None)
    return bool(fn()) if fn is not None else False


_ = CompileError  # re-exported by the package


def _events():
    import sys

    return sys.modules["ember.compiler.explain"]
