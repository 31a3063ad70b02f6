"""Compiler settings (``torch._dynamo.config``): plain attributes, checked on assignment.

``ember.compiler.config.recompile_limit = 4`` changes a setting for the process;
``with config.patch(recompile_limit=2): ...`` changes it for a block.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["config", "Config", "default_backend"]

DEFAULT_BACKEND = "c"


def default_backend() -> str:
    """The backend of ``ember.compile(backend="inductor")`` (its default): ``$EMBER_BACKEND``
    when set (``c``, ``numpy`` or ``eager``), else ``DEFAULT_BACKEND``. The ``c`` backend
    itself falls back to ``numpy``, with one warning, where no C compiler works."""
    return os.environ.get("EMBER_BACKEND") or DEFAULT_BACKEND

_DEFAULTS = {
    # entries per (code object, offset) before the frame runs natively (Dynamo's default)
    "recompile_limit": 8,
    # entries per compiled function in total
    "accumulated_recompile_limit": 256,
    # a graph break inside a loop: "native" runs the whole frame natively and says so
    "on_break_in_loop": "native",
    # capture budgets (instructions interpreted per frame, inlining depth)
    "instruction_budget": 200_000,
    "inline_depth": 32,
    # dynamic=None: mark a dimension dynamic after a shape-caused recompile
    "automatic_dynamic_shapes": True,
    "assume_static_by_default": True,
    # raise instead of falling back to eager when the compiler itself fails
    "suppress_errors": False,
    "verbose": False,
    # torch names accepted for scripts written against torch._dynamo.config
    "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False,
    "cache_size_limit": 8,
}
_ALIASES = {"cache_size_limit": "recompile_limit",
            "accumulated_cache_size_limit": "accumulated_recompile_limit"}


class Config:
    """The settings object; unknown names raise AttributeError (a typo should not pass)."""

    def __init__(self):
        object.__setattr__(self, "_values", dict(_DEFAULTS))

    def __getattr__(self, name: str):
        values = object.__getattribute__(self, "_values")
        name = _ALIASES.get(name, name)
        if name in values:
            return values[name]
        raise AttributeError(f"ember.compiler.config has no setting {name!r}; known: "
                             f"{sorted(values)}")

    def __setattr__(self, name: str, value) -> None:
        name = _ALIASES.get(name, name)
        if name not in self._values:
            raise AttributeError(f"ember.compiler.config has no setting {name!r}; known: "
                                 f"{sorted(self._values)}")
        if name.endswith("_limit") and (not isinstance(value, int) or value < 0):
            raise ValueError(f"config.{name} must be a non-negative int; got {value!r}")
        self._values[name] = value

    @contextlib.contextmanager
    def patch(self, **changes):
        """Change settings inside a ``with`` block (``torch._dynamo.config.patch``)."""
        saved = {k: getattr(self, k) for k in changes}
        try:
            for k, v in changes.items():
                setattr(self, k, v)
            yield self
        finally:
            for k, v in saved.items():
                setattr(self, k, v)

    def to_dict(self) -> dict:
        return dict(self._values)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in sorted(self._values.items()))
        return f"ember.compiler.config({body})"


config = Config()
