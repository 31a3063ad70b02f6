"""Error classes of ember.

Each subclasses the builtin a PyTorch user would catch, so ``except RuntimeError`` written for
torch keeps working. Messages follow ``<op>: <what is wrong>; got <values>; expected <rule>``.
"""

from __future__ import annotations


class EmberError(Exception):
    """Base of ember's own errors (never raised directly)."""


class OutOfMemoryError(RuntimeError, EmberError):
    """An allocation failed because the device's capacity is exhausted (like torch's).

    Example:
        >>> ember.memory.empty_cache("meta")
        >>> ember.memory.set_memory_limit(1 << 20, "meta")
        >>> try:
        ...     ember.empty(1 << 20, device="meta")  # 4 MiB
        ... except ember.OutOfMemoryError as e:
        ...     print(isinstance(e, RuntimeError))
        True
        >>> ember.memory.set_memory_limit(None, "meta")
    """


class DispatchError(NotImplementedError, EmberError):
    """No kernel can serve an operator for the dispatch keys of a call."""


class SchemaError(ValueError, EmberError):
    """An operator schema string could not be parsed."""


def cuda_not_compiled(exc: type[Exception] = AssertionError) -> Exception:
    """torch's "not compiled with CUDA enabled" error, raised where a CUDA device is needed
    but no ``"cuda"`` backend is registered; ``exc`` is the type torch raises at that call."""
    return exc("ember not compiled with CUDA enabled: no 'cuda' backend is registered\n"
               "hint: choose the device with `\"cuda\" if ember.cuda.is_available() else "
               "\"cpu\"`")
