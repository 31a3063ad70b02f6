"""Looking inside the dispatcher: ``trace()`` prints each operator call and the key path it
took; ``dispatch_table(op)`` shows which kernel serves each dispatch key of an operator.

Both only *read* dispatcher state (``Operator.resolve``, the thread's key sets); neither
changes how an operator runs. ``trace`` is an ordinary Python dispatch mode.

NOTE [Trace key paths]
A mode sits at the ``Python`` key, below autograd, so by the time it sees a call the keys
above it have already run. ``trace`` therefore reconstructs the whole path from the operator's
table: the call's key set (tensor arguments' keys, plus the thread's included keys, minus its
excluded keys, both as they were when the trace was entered) walked from the highest key down,
listing each key whose kernel is not a fallthrough. The walk adds the ``device=`` backend at
``BackendSelect`` (that kernel redispatches there) and stops at a backend key or at a math
(``CompositeImplicitAutograd``) kernel, which decomposes into other calls instead of continuing.
"""

from __future__ import annotations

import builtins
import sys
from typing import NamedTuple, TextIO

from ember.core.device import as_device
from ember.dispatch import FALLTHROUGH, DispatchKey, DispatchMode, Operator, get_op
from ember.dispatch.dispatcher import dispatch_state
from ember.dispatch.keys import BACKEND_KEY_OF_DEVICE, BACKEND_KEYS
from ember.ops.namespaces import OpPacket
from ember.tensor import Tensor

__all__ = ["trace", "TraceEvent", "TensorInfo", "key_path", "dispatch_table", "DispatchTable",
           "DispatchRow"]

K = DispatchKey
_PYTHON_BIT = 1 << K.Python
_ALIAS_NOTE = {
    "default backend kernel": "default backend kernel [CompositeExplicitAutograd]",
    "math kernel": "math kernel [CompositeImplicitAutograd]",
}


# -- trace ----------------------------------------------------------------------------------
class TensorInfo(NamedTuple):
    """What a trace keeps of a tensor argument: its shape, dtype and device type."""

    shape: tuple
    dtype: str
    device: str

    def __str__(self) -> str:
        return f"{self.dtype.removeprefix('ember.')}{list(self.shape)}"


class TraceEvent(NamedTuple):
    """One traced call: the operator, its display name, the key path, and its arguments."""

    op: Operator
    name: str
    path: tuple[str, ...]
    args: tuple
    kwargs: dict

    def __str__(self) -> str:
        return f"{self.name}  {' -> '.join(self.path)}"


def _describe(x):
    if isinstance(x, Tensor):
        return TensorInfo(tuple(x._shape), str(x._dtype), x._device.type)
    if isinstance(x, list | tuple) and any(isinstance(t, Tensor) for t in x):
        return tuple(_describe(t) for t in x)
    return x


def _call_keys(op: Operator, args, kwargs) -> int:
    """The OR of the tensor arguments' key sets, scanned the way the dispatcher scans them."""
    ks = 0
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            ks |= a._keys
        elif isinstance(a, list | tuple):
            for t in a:
                if isinstance(t, Tensor):
                    ks |= t._keys
    return ks


def _backend_bit(kwargs) -> int:
    try:
        return 1 << BACKEND_KEY_OF_DEVICE[as_device(kwargs.get("device")).type]
    except (KeyError, RuntimeError, TypeError, ValueError):
        return 0


def key_path(op: Operator, ks: int, kwargs=None) -> tuple[str, ...]:
    """The keys whose kernels run when ``op`` is called with key set ``ks``, highest first.

    See NOTE [Trace key paths]. The ``Python`` key (dispatch modes) is left out.

    Example:
        >>> import ember
        >>> from ember.dispatch import get_op
        >>> key_path(get_op("add.Tensor"), ember.ones(2)._keys)
        ('CPU',)
    """
    path, k = [], ks & ~_PYTHON_BIT
    while k:
        key = K(k.bit_length() - 1)
        k &= ~(1 << key)
        kernel, why = op.resolve(key)
        if kernel is FALLTHROUGH:
            continue
        if kernel is None:
            path.append(f"{key.name} (missing)")
            break
        path.append(key.name)
        if key is K.BackendSelect:
            k |= _backend_bit(kwargs or {})
        if key in BACKEND_KEYS or why == "math kernel":
            break
    return tuple(path)


def _display_name(op: Operator) -> str:
    return op.short_name if op.namespace == "aten" else f"{op.namespace}::{op.short_name}"


class trace(DispatchMode):
    """Print every operator call and the dispatch-key path it took; keep them in ``events``.

    Args:
        file: where to print (default ``sys.stdout`` at the time of each call).
        print: ``False`` records ``events`` without printing.

    Each line reads ``<op>.<overload>  <key> -> ... -> <key>``; ops called inside composite
    operators appear too, since they go through the dispatcher. See NOTE [Trace key paths].

    Example:
        >>> import ember
        >>> from ember.utils.dispatch import trace
        >>> with trace() as t:
        ...     y = ember.ones(2) + 1
        ones.default  BackendSelect -> CPU
        add.Tensor  CPU
        >>> [e.name for e in t.events]
        ['ones.default', 'add.Tensor']
    """

    def __init__(self, *, file: TextIO | None = None, print: bool = True):
        self.file = file
        self.print = print
        self.events: list[TraceEvent] = []
        self._included = 0
        self._keep = 0

    def __enter__(self):
        st = dispatch_state()
        self._included, self._keep = st.included, st.keep
        return super().__enter__()

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ks = (_call_keys(func, args, kwargs) | self._included) & self._keep
        event = TraceEvent(func, _display_name(func), key_path(func, ks, kwargs),
                           tuple(_describe(a) for a in args),
                           {k: _describe(v) for k, v in kwargs.items()})
        self.events.append(event)
        if self.print:
            builtins.print(event, file=self.file if self.file is not None else sys.stdout)
        return func(*args, **kwargs)


# -- dispatch_table -------------------------------------------------------------------------
class DispatchRow(NamedTuple):
    """One runtime key of an operator's table: the kernel serving it and why."""

    key: str
    kernel: str
    why: str


class DispatchTable:
    """An operator's dispatch table, one row per runtime key, highest priority first.

    Index it by key name (``table["CPU"].why``); ``str()`` gives the printable table.
    """

    def __init__(self, op: Operator, rows: list[DispatchRow]):
        self.op = op
        self.rows = rows

    def __getitem__(self, key: str) -> DispatchRow:
        for row in self.rows:
            if row.key == key:
                return row
        raise KeyError(key)

    def __str__(self) -> str:
        kw = max(len(r.key) for r in self.rows)
        ww = max(len(r.why) for r in self.rows)
        lines = [self.op.qualname]
        lines += [f"  {r.key:<{kw}}  {r.why:<{ww}}  {r.kernel}".rstrip() for r in self.rows]
        return "\n".join(lines)

    __repr__ = __str__


def _as_operator(op) -> Operator:
    if isinstance(op, Operator):
        return op
    if isinstance(op, OpPacket):
        return op._overloads()[0]
    if isinstance(op, str):
        return get_op(op)
    raise TypeError(f"dispatch_table: expected an operator name or Operator; "
                    f"got {type(op).__name__}")


def _row(op: Operator, key: DispatchKey) -> DispatchRow:
    kernel, why = op.resolve(key)
    if kernel is None:
        return DispatchRow(key.name, "-", "missing")
    if kernel is FALLTHROUGH:
        where = "registered" if op._direct.get(key) is FALLTHROUGH else "backend fallback"
        return DispatchRow(key.name, f"({where})", "fallthrough")
    return DispatchRow(key.name, kernel.source, _ALIAS_NOTE.get(why, why))


def dispatch_table(op) -> DispatchTable:
    """Which kernel serves each runtime dispatch key of ``op`` and why.

    Like ``torch._C._dispatch_dump_table``. ``why`` is one of "kernel", "default backend kernel
    [CompositeExplicitAutograd]", "math kernel [CompositeImplicitAutograd]", "autograd kernel",
    "backend fallback", "fallthrough", "missing".

    Args:
        op: an ``Operator``, an ``ember.ops.<ns>.<name>`` packet (its first overload), or a
            name: ``"add"``, ``"add.Tensor"``, ``"aten::add.Tensor"``, ``"myns::op"``.

    Returns:
        A :class:`DispatchTable`; print it to see the table.

    Example:
        >>> from ember.utils.dispatch import dispatch_table
        >>> dispatch_table("add")["CPU"].why
        'kernel'
        >>> dispatch_table("zeros_like")["CPU"].why
        'math kernel [CompositeImplicitAutograd]'
    """
    op = _as_operator(op)
    return DispatchTable(op, [_row(op, key) for key in sorted(K, reverse=True)])
