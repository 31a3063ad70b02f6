"""``ember.compiler``: capture Python bytecode into graphs, guard them, compile them.

``ember.compile(fn)`` (``torch.compile``) returns a callable that runs ``fn`` through the
capture; ``explain(fn)(*args)`` reports graphs, graph breaks and guards; ``EMBER_LOGS`` /
:func:`set_logs` print compiler events as they happen; ``make_fx`` traces a function without
Python control flow into a graph. Layout: ``graph`` (IR), ``meta`` and ``tracing`` (shape
propagation, recording mode), ``backends`` (eager, numpy), ``guards``, ``cache``, ``explain``,
``logs``, ``config``; the bytecode side is ``bytecode``, ``concrete``, ``symbolic``,
``sources``, ``side_effects`` and ``driver`` (INTERFACES.md).
"""

from __future__ import annotations

from ember.compiler.api import (
    NotCallableError,
    OptimizedModule,
    allow_in_graph,
    compile,  # noqa: A004
    disable,
    is_compiling,
    reset,
)
from ember.compiler.backends import list_backends, register_backend
from ember.compiler.config import config
from ember.compiler.exc import CompileError, GraphBreakError
from ember.compiler.explain import ExplainOutput, explain
from ember.compiler.graph import Graph, GraphModule, Node
from ember.compiler.logs import set_logs
from ember.compiler.tracing import make_fx

__all__ = ["compile", "explain", "disable", "allow_in_graph", "reset", "config", "set_logs",
           "make_fx", "Graph", "GraphModule", "Node", "CompileError", "GraphBreakError",
           "ExplainOutput", "OptimizedModule", "NotCallableError", "list_backends",
           "register_backend", "is_compiling"]
