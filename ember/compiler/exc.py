"""Compiler errors: ``CompileError`` and ``GraphBreakError`` (raised with ``fullgraph=True``).

A break is structured data (reason, the user's stack, a hint), as in Dynamo's ``exc.py``;
the message renders it with the user's source line.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CompileError", "GraphBreakError", "UserFrame", "format_user_stack"]


class UserFrame(NamedTuple):
    """One frame of the user's code: file, line, function and the source line's text."""

    filename: str
    lineno: int
    name: str = ""
    line: str = ""

    def __str__(self) -> str:
        return f'File "{self.filename}", line {self.lineno}, in {self.name}\n    {self.line}'


def as_user_frame(f) -> UserFrame:
    """A ``UserFrame`` from a tuple ``(filename, lineno, source_line, qualname)`` or a
    ``traceback.FrameSummary``-like object."""
    if isinstance(f, UserFrame):
        return f
    if isinstance(f, tuple):
        filename, lineno, *rest = f
        line = rest[0] if rest else ""
        name = rest[1] if len(rest) > 1 else ""
        if not line:
            import linecache

            line = linecache.getline(filename, lineno).strip()
        return UserFrame(filename, int(lineno), name or "", (line or "").strip())
    return UserFrame(f.filename, f.lineno, getattr(f, "name", ""), (f.line or "").strip())


def format_user_stack(stack) -> str:
    """The user's frames, innermost last, one ``File ..., line N, in f`` block each."""
    return "\n".join(f"  {as_user_frame(f)}" for f in stack)


class CompileError(RuntimeError):
    """The compiler could not compile a function (bad options, backend failure).

    Example:
        >>> issubclass(ember.compiler.GraphBreakError, ember.compiler.CompileError)
        True
        >>> issubclass(ember.compiler.CompileError, RuntimeError)
        True
    """


class GraphBreakError(CompileError):
    """Capture had to break the graph where ``fullgraph=True`` forbids it.

    Attributes: ``reason`` (what could not be captured), ``user_stack`` (``UserFrame``s,
    innermost last), ``hint`` (the usual fix, or None).

    Example:
        >>> def f(x):
        ...     print("side effect")  # printing cannot be captured: a graph break
        ...     return x * 2
        >>> try:
        ...     ember.compile(f, fullgraph=True, backend="eager")(ember.ones(2))
        ... except ember.compiler.GraphBreakError:
        ...     print("graph break")
        graph break
    """

    def __init__(self, reason: str, user_stack=(), hint: str | None = None):
        self.reason = reason
        self.user_stack = [as_user_frame(f) for f in user_stack]
        self.hint = hint
        text = f"graph break: {reason}"
        if self.user_stack:
            text += "\n" + format_user_stack(self.user_stack)
        if hint:
            text += f"\nhint: {hint}"
        super().__init__(text)
