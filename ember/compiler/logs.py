"""Compiler logging in the spirit of ``TORCH_LOGS``: named artifacts printed as events happen.

``EMBER_LOGS="graph_breaks,recompiles,guards,graph_code,bytecode"`` (or ``TORCH_LOGS`` with
the same names) switches artifacts on at import; :func:`set_logs` changes them at run time.
Each event prints one block to ``sys.stderr`` prefixed ``[ember.compiler.<artifact>]``.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["ARTIFACTS", "set_logs", "enabled", "log", "enabled_logs"]

ARTIFACTS = ("graph_breaks", "recompiles", "guards", "graph_code", "bytecode", "graph",
             "output_code", "recompiles_verbose", "dynamic", "perf_hints")
# torch spellings that mean one of ours
_ALIASES = {"graph": "graph_code", "output_code": "graph_code", "recompiles_verbose": "recompiles"}

_enabled: set[str] = set()


def _parse(text: str) -> set[str]:
    names: set[str] = set()
    for raw in text.replace(" ", ",").split(","):
        name = raw.strip().lstrip("+")
        if not name:
            continue
        if name not in ARTIFACTS:
            warnings.warn(f"EMBER_LOGS: unknown artifact {name!r}; known: {', '.join(ARTIFACTS)}",
                          stacklevel=3)
            continue
        names.add(_ALIASES.get(name, name))
    return names


def _from_env() -> None:
    for var in ("TORCH_LOGS", "EMBER_LOGS"):
        value = os.environ.get(var)
        if value:
            _enabled.update(_parse(value))


def set_logs(*names: str, **flags: bool) -> None:
    """Choose which compiler events print (``torch._logging.set_logs``).

    Args:
        names: artifact names to switch on (``"graph_breaks"``, ``"recompiles"``, ...).
        flags: ``graph_breaks=True, recompiles=False, ...`` (torch's keyword form).

    Calling it with no arguments switches every artifact off. Unknown names raise ValueError.

    Example:
        >>> set_logs(graph_breaks=True)
        >>> enabled("graph_breaks")
        True
        >>> set_logs()
    """
    unknown = [n for n in (*names, *flags) if n not in ARTIFACTS]
    if unknown:
        raise ValueError(f"set_logs: unknown artifact(s) {unknown}; known: {list(ARTIFACTS)}")
    _enabled.clear()
    for n in names:
        _enabled.add(_ALIASES.get(n, n))
    for n, on in flags.items():
        if on:
            _enabled.add(_ALIASES.get(n, n))


def enabled(name: str) -> bool:
    """Whether artifact ``name`` prints."""
    return name in _enabled


def enabled_logs() -> list[str]:
    """The artifacts switched on, sorted."""
    return sorted(_enabled)


def log(name: str, message: str) -> None:
    """Print ``message`` under artifact ``name`` if it is on."""
    if name in _enabled:
        print(f"[ember.compiler.{name}] {message}", file=sys.stderr)


_from_env()
