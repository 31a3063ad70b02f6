"""Backends: turn a captured ``Graph`` into a callable.

``"eager"`` replays the graph with ember ops (debugging capture); ``"numpy"`` generates
Python/NumPy source (the default); a user callable receives ``(GraphModule, example_inputs)``
and returns a callable, as in ``torch.compile``. :func:`compile_graph` is the one entry point
the rest of the compiler uses.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.autograd.grad_mode import grad_state
from ember.compiler.graph import Graph, GraphModule
from ember.tensor import Tensor

__all__ = ["compile_graph", "register_backend", "lookup_backend", "list_backends"]

_BACKENDS: dict[str, Callable] = {}


def register_backend(name: str, fn: Callable | None = None):
    """Register ``fn(graph_module, example_inputs) -> callable`` under ``name``.

    Example:
        >>> from ember.compiler import register_backend
        >>> @register_backend("doc_example_backend")
        ... def passthrough(gm, example_inputs):
        ...     return gm  # a GraphModule is callable as it is
        >>> ember.compile(lambda x: x + 1, backend="doc_example_backend")(ember.ones(2))
        tensor([2., 2.])
    """
    def deco(f):
        _BACKENDS[name] = f
        return f

    return deco(fn) if fn is not None else deco


def list_backends() -> list[str]:
    """Names of the registered backends (``torch._dynamo.list_backends``).

    Example:
        >>> {"eager", "numpy"} <= set(ember.compiler.list_backends())
        True
    """
    _load()
    return sorted(_BACKENDS)


def _load() -> None:
    if "numpy" not in _BACKENDS or "eager" not in _BACKENDS:
        from ember.compiler.backends import eager, numpy_backend  # noqa: F401 - registers
    if "c" not in _BACKENDS:
        from ember.compiler.backends import c_backend  # noqa: F401 - registers


def lookup_backend(backend) -> Callable:
    """The backend function for a name or a callable.

    Raises:
        ValueError: unknown backend name (the message lists the known ones).
    """
    _load()
    if callable(backend):
        return backend
    if isinstance(backend, str) and backend in _BACKENDS:
        return _BACKENDS[backend]
    raise ValueError(f"ember.compile: unknown backend {backend!r}; expected one of "
                     f"{sorted(_BACKENDS)} or a callable (graph_module, example_inputs) -> "
                     f"callable")


def _needs_autograd(graph: Graph, example_inputs) -> bool:
    """An input requires grad and some op runs with grad mode on (the mode each node was
    recorded under; a graph may start inside a ``no_grad`` block and leave it)."""
    if not any(isinstance(t, Tensor) and t.requires_grad for t in example_inputs):
        return False
    now = grad_state().enabled
    return any(n.meta.get("grad_mode", now) for n in graph.calls())



def compile_graph(graph: Graph, example_inputs, backend="numpy", _training=True) -> Callable:
    """Compile ``graph`` with ``backend``; the result maps the graph inputs to its outputs.

    While grad mode is on and an input tensor requires grad, a built-in backend compiles the
    graph as a training region (``ember.compiler.aot``: a forward and a backward graph run as
    one autograd node). A region that path cannot take runs on the eager backend, so that
    autograd records it op by op; the reason is logged under ``EMBER_LOGS=graph_code``.
    """
    fn = lookup_backend(backend)
    gm = GraphModule(graph)
    if _training and isinstance(backend, str) and backend != "eager" and \
            _needs_autograd(graph, example_inputs):
        from ember.compiler import aot, logs

        try:
            return aot.compile_training(graph, list(example_inputs), backend)
        except aot.AotUnsupported as e:
            logs.log("graph_code", f"graph inputs require grad and the region cannot be "
                     f"compiled for training ({e}): running it with the eager backend")
        return _BACKENDS["eager"](gm, example_inputs)
    compiled = fn(gm, list(example_inputs))
    if not callable(compiled):
        raise TypeError(f"ember.compile: backend {backend!r} returned {type(compiled).__name__}, "
                        f"expected a callable")
    return compiled
