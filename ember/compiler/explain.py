"""Compiler events and the ``explain()`` report.

The capture reports what happens through ``record_*`` functions: a compiled graph, a graph
break (reason, the user's stack, a hint), a recompile and its guard failure, a frame left to
run natively. Each event is printed at once when its ``EMBER_LOGS`` artifact is on, and is
appended to every active ``explain`` collector (thread-local). ``explain(fn)(*args)`` runs one
call under a fresh compile context and returns an ``ExplainOutput`` with torch's field names.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ember.compiler import logs
from ember.compiler.exc import UserFrame, as_user_frame

__all__ = ["BreakReason", "ExplainOutput", "explain", "record_graph", "record_break",
           "record_recompile", "record_native", "record_bytecode", "collecting"]


@dataclass
class BreakReason:
    """One graph break: why, where in the user's code (innermost frame last), and the fix."""

    reason: str
    user_stack: list[UserFrame] = field(default_factory=list)
    hint: str | None = None

    def __str__(self) -> str:
        lines = [f"Reason: {self.reason}"]
        if self.user_stack:
            lines.append("User Stack:")
            for f in self.user_stack:
                lines.append(f"  {f.filename}:{f.lineno} in {f.name}")
                if f.line:
                    lines.append(f"    {f.lineno} |     {f.line}")
        if self.hint:
            lines.append(f"Hint: {self.hint}")
        return "\n".join(lines)


@dataclass
class ExplainOutput:
    """What one compiled call did (``torch._dynamo.explain``'s ``ExplainOutput``).

    Fields: ``graphs`` (GraphModules), ``graph_count``, ``graph_break_count``,
    ``break_reasons`` (``BreakReason``s), ``op_count``, ``ops_per_graph`` (op names per
    graph), ``guards`` (guard descriptions per entry; ``out_guards`` is torch's name),
    ``compile_times`` (seconds per phase), ``recompiles`` ((where, reason)),
    ``native_frames`` ((where, reason)).

    Example:
        >>> out = ember.compiler.explain(lambda x: (x * 2).sum())(ember.ones(3))
        >>> out.graph_count, out.graph_break_count, len(out.graphs)
        (1, 0, 1)
    """

    graphs: list = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list[BreakReason] = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list[list[str]] = field(default_factory=list)
    guards: list[list[str]] = field(default_factory=list)
    compile_times: dict[str, float] = field(default_factory=dict)
    recompiles: list[tuple[str, str]] = field(default_factory=list)
    native_frames: list[tuple[str, str]] = field(default_factory=list)
    guard_sources: list[str] = field(default_factory=list)

    @property
    def out_guards(self) -> list[list[str]]:
        return self.guards

    def __str__(self) -> str:
        out = [f"Graph Count: {self.graph_count}",
               f"Graph Break Count: {self.graph_break_count}",
               f"Op Count: {self.op_count}"]
        if self.break_reasons:
            out.append("Break Reasons:")
            for i, br in enumerate(self.break_reasons, 1):
                out.append(f"  Break Reason {i}:")
                out += ["    " + ln for ln in str(br).splitlines()]
        if self.native_frames:
            out.append("Frames run natively:")
            out += [f"  {where}: {why}" for where, why in self.native_frames]
        if self.recompiles:
            out.append("Recompiles:")
            out += [f"  {where}: {why}" for where, why in self.recompiles]
        for i, (g, ops) in enumerate(zip(self.graphs, self.ops_per_graph), 1):
            out.append(f"Graph {i} ({len(ops)} ops):")
            code = g.code if hasattr(g, "code") else str(g)
            out += ["  " + ln for ln in code.rstrip().splitlines()]
        for i, gs in enumerate(self.guards, 1):
            out.append(f"Guards of entry {i}:")
            out += [f"  {g}" for g in gs]
        if self.compile_times:
            times = ", ".join(f"{k} {v:.4f}s" for k, v in self.compile_times.items())
            out.append(f"Compile Times: {times}")
        return "\n".join(out)

    __repr__ = __str__


# -- collectors -------------------------------------------------------------------------------
class _Local(threading.local):
    def __init__(self):
        self.collectors: list[ExplainOutput] = []


_local = _Local()


class collecting:
    """Context manager: events on this thread are also appended to a new ``ExplainOutput``."""

    def __enter__(self) -> ExplainOutput:
        self.out = ExplainOutput()
        _local.collectors.append(self.out)
        return self.out

    def __exit__(self, *exc):
        _local.collectors.remove(self.out)
        return False


def _op_names(graph) -> list[str]:
    import operator

    names = []
    for n in graph.nodes:
        if n.op == "call" and n.target is not operator.getitem:
            names.append(getattr(n.target, "short_name", getattr(n.target, "__name__", "?")))
    return names


def record_graph(graph, guards=None, code=None, where: str = "", compile_time: float = 0.0):
    """A graph was compiled (``guards``: its GuardSet; ``code``: generated source)."""
    from ember.compiler.graph import GraphModule

    gm = graph if isinstance(graph, GraphModule) else GraphModule(graph)
    g = gm.graph
    if logs.enabled("graph_code"):
        logs.log("graph_code", f"graph of {where or 'a frame'} ({g.op_count()} ops):\n"
                 f"{g.print_readable(print_output=False)}" + (f"\n{code}" if code else ""))
    if guards is not None and logs.enabled("guards"):
        logs.log("guards", f"guards of {where or 'a frame'}:\n{guards.source}")
    for out in _local.collectors:
        ops = _op_names(g)
        out.graphs.append(gm)
        out.graph_count += 1
        out.op_count += len(ops)
        out.ops_per_graph.append(ops)
        if guards is not None:
            out.guards.append(guards.describe())
            out.guard_sources.append(guards.source)
        out.compile_times["total"] = out.compile_times.get("total", 0.0) + compile_time


def record_break(reason: str, user_stack=(), hint: str | None = None) -> BreakReason:
    """A graph break at the innermost frame of ``user_stack`` (tuples
    ``(filename, lineno, source_line, qualname)`` or ``UserFrame``s)."""
    br = BreakReason(reason, [as_user_frame(f) for f in user_stack], hint)
    if logs.enabled("graph_breaks"):
        logs.log("graph_breaks", f"Graph break: {br}")
    for out in _local.collectors:
        out.break_reasons.append(br)
        out.graph_break_count += 1
    return br


def record_recompile(where: str, reason: str) -> None:
    """A guard miss led to a new entry at ``where``."""
    logs.log("recompiles", f"Recompiling {where}\n    triggered by the guard failure: {reason}")
    for out in _local.collectors:
        out.recompiles.append((where, reason))


def record_native(where: str, reason: str) -> None:
    """A frame runs natively (uncompiled) from now on, and why."""
    logs.log("graph_breaks", f"{where} runs natively: {reason}")
    for out in _local.collectors:
        out.native_frames.append((where, reason))


def record_bytecode(where: str, text: str) -> None:
    """Decoded instructions of a frame about to be captured (``EMBER_LOGS=bytecode``)."""
    logs.log("bytecode", f"bytecode of {where}:\n{text}")


def record_compile_time(phase: str, seconds: float) -> None:
    """Add ``seconds`` to ``phase`` in the active reports' ``compile_times``."""
    for out in _local.collectors:
        out.compile_times[phase] = out.compile_times.get(phase, 0.0) + seconds


# -- explain ------------------------------------------------------------------------------------
def explain(fn, *extra_args, **extra_kwargs):
    """Run ``fn`` once compiled and report its graphs, breaks and guards
    (``torch._dynamo.explain``).

    ``explain(fn)(*args, **kwargs)`` returns an :class:`ExplainOutput`; the older form
    ``explain(fn, *args)`` runs at once. The call uses a fresh compile context with the eager
    backend, so the user's compiled caches are untouched.

    Example:
        >>> import ember
        >>> out = explain(lambda x: (x + 1).relu())(ember.ones(3))
        >>> out.graph_count, out.graph_break_count
        (1, 0)
    """
    from ember.compiler.api import compile as _compile

    def inner(*args, **kwargs):
        compiled = _compile(fn, backend="eager")
        with collecting() as out:
            t0 = time.perf_counter()
            compiled(*args, **kwargs)
            out.compile_times.setdefault("total", time.perf_counter() - t0)
        return out

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
