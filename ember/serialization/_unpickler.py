"""Unpicklers: the weights-only one (the default) and the unsafe one (``weights_only=False``).

NOTE [Weights-only unpickling]
``WeightsUnpickler`` is a small pickle virtual machine of its own, one handler per opcode, that
understands only PyTorch's protocol-2 subset (the opcodes ``torch.save`` emits for tensors and
plain containers). GLOBAL resolves through ``resolve_global`` (an allowlist), so a refused
name fails *before* any object is constructed; REDUCE and NEWOBJ call only allowlisted
callables; BUILD, APPEND(S) and SETITEM(S) act only on the types that need them. Every length
is checked against the bytes that remain, nothing recurses, and any malformed stream raises
``UnpicklingError``. The stdlib unpickler is never involved.
"""

from __future__ import annotations

import pickle
import pickletools
import struct
from collections import Counter, OrderedDict

from ember.serialization._common import CheckpointError, UnpicklingError, user_allowed_globals
from ember.serialization._rebuild import (
    apply_tensor_state,
    is_allowed_callable,
    is_default_allowed,
    normalize,
    resolve_global,
)
from ember.serialization._torch_modules import find_equivalent, no_equivalent
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["WeightsUnpickler", "UnsafeUnpickler", "Source", "SUPPORTED_OPCODES"]

_MAX_LINE = 1024


class Source:
    """Bytes to unpickle from: a bytes object or a binary file of known size, read with bounds."""

    def __init__(self, f, size: int | None = None):
        if isinstance(f, bytes | bytearray | memoryview):
            import io
            f, size = io.BytesIO(bytes(f)), len(f)
        self._f = f
        if size is None:
            pos = f.tell()
            size = f.seek(0, 2)
            f.seek(pos)
        self.size = size

    def tell(self) -> int:
        return self._f.tell()

    def read(self, n: int) -> bytes:
        if n < 0 or n > self.size - self._f.tell():
            raise UnpicklingError("pickle data was truncated")
        return self._f.read(n)

    def readline(self) -> bytes:
        line = self._f.readline(_MAX_LINE)
        if not line.endswith(b"\n"):
            raise UnpicklingError("pickle data was truncated (or a GLOBAL name is too long)")
        return line[:-1]


class _Passthrough(Exception):
    """Carries an error from user code (a ``map_location`` callable) past the wrapping."""

    def __init__(self, error: BaseException):
        super().__init__(error)
        self.error = error


def _unsupported(op: bytes) -> str:
    if not op:
        return "pickle data was truncated (no STOP opcode)"
    known = _OPNAMES.get(op[0])
    return f"Unsupported operand {op[0]}" + (f" ({known})" if known else "") + \
        "; the weights-only unpickler reads PyTorch's protocol-2 subset only"


def _err(msg: str) -> UnpicklingError:
    return UnpicklingError(f"Weights only load failed: {msg}")


class WeightsUnpickler:
    """Unpickle one pickle from ``source`` with the weights-only rules.

    Args:
        source: a ``Source``.
        persistent_load: called with each persistent id (a tuple); returns the storage.
    """

    def __init__(self, source: Source, persistent_load):
        self._src = source
        self._persistent_load = persistent_load
        self.stack: list = []
        self.metastack: list = []
        self.memo: dict = {}

    def load(self):
        read = self._src.read
        handlers = _HANDLERS
        try:
            while True:
                op = read(1)
                handler = handlers.get(op)
                if handler is None:
                    raise _err(_unsupported(op))
                if handler is _stop:
                    return self._pop()
                handler(self)
        except (UnpicklingError, CheckpointError):
            raise
        except _Passthrough as p:
            raise p.error from None
        except RecursionError:
            raise _err("the pickle nests too deeply") from None
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError,
                struct.error, UnicodeDecodeError, MemoryError) as e:
            raise _err(f"malformed pickle ({type(e).__name__}: {e})") from None

    # -- stack helpers -----------------------------------------------------------------------
    def _pop(self):
        if not self.stack:
            raise _err("stack underflow")
        return self.stack.pop()

    def _pop_mark(self) -> list:
        if not self.metastack:
            raise _err("MARK expected but not found")
        items = self.stack
        self.stack = self.metastack.pop()
        return items


# -- opcode handlers ----------------------------------------------------------------------------
def _proto(u: WeightsUnpickler) -> None:
    u._src.read(1)


def _global(u: WeightsUnpickler) -> None:
    module = u._src.readline().decode("utf-8")
    name = u._src.readline().decode("utf-8")
    u.stack.append(resolve_global(module, name))


def _reduce(u: WeightsUnpickler) -> None:
    args = u._pop()
    func = u._pop()
    if not is_allowed_callable(func) or func is Tensor:
        raise _err(f"Trying to call reduce for unrecognized function {func!r}")
    if not isinstance(args, tuple):
        raise _err(f"REDUCE arguments must be a tuple; got {type(args).__name__}")
    u.stack.append(_call(func, args))


def _call(func, args):
    try:
        return func(*args)
    except (UnpicklingError, CheckpointError):
        raise
    except (TypeError, ValueError, RuntimeError, OverflowError) as e:
        raise _err(f"calling {getattr(func, '__name__', func)!r} failed ({e})") from None


def _newobj(u: WeightsUnpickler) -> None:
    args = u._pop()
    cls = u._pop()
    if not isinstance(cls, type) or not isinstance(args, tuple):
        raise _err(f"NEWOBJ needs a class and a tuple; got {cls!r}")
    if cls is Parameter:
        u.stack.append(_call(Parameter, args))
    elif any(cls is v for v in user_allowed_globals().values()):
        u.stack.append(_call(cls.__new__, (cls, *args)))
    else:
        raise _err(f"Trying to instantiate unsupported class {cls!r}")


def _build(u: WeightsUnpickler) -> None:
    state = u._pop()
    if not u.stack:
        raise _err("stack underflow")
    inst = u.stack[-1]
    cls = type(inst)
    if cls in (Tensor, Parameter):
        apply_tensor_state(inst, state)
    elif cls in (OrderedDict, Counter):
        # e.g. a state_dict's ``_metadata``: plain instance attributes.
        if state is not None:
            if not isinstance(state, dict) or any(type(k) is not str for k in state):
                raise _err(f"refused state for {cls.__name__}")
            inst.__dict__.update(state)
    elif any(cls is v for v in user_allowed_globals().values()):
        _set_state(inst, state)
    else:
        raise _err(f"Tried to BUILD an instance of unsupported type {cls!r}")


def _set_state(inst, state) -> None:
    setstate = getattr(inst, "__setstate__", None)
    if setstate is not None and getattr(type(inst), "__setstate__", None) is not \
            getattr(object, "__setstate__", None):
        _call(setstate, (state,))
        return
    slotstate = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slotstate = state
    if state:
        if not isinstance(state, dict):
            raise _err(f"BUILD state must be a dict; got {type(state).__name__}")
        inst.__dict__.update(state)
    if slotstate:
        if not isinstance(slotstate, dict):
            raise _err("BUILD slot state must be a dict")
        for k, v in slotstate.items():
            setattr(inst, k, v)


def _append(u: WeightsUnpickler) -> None:
    value = u._pop()
    target = u.stack[-1] if u.stack else None
    if type(target) is not list:
        raise _err(f"Can only append to lists, but got {type(target).__name__}")
    target.append(value)


def _appends(u: WeightsUnpickler) -> None:
    items = u._pop_mark()
    target = u.stack[-1] if u.stack else None
    if type(target) is not list:
        raise _err(f"Can only extend lists, but got {type(target).__name__}")
    target.extend(items)


def _setitem(u: WeightsUnpickler) -> None:
    value = u._pop()
    key = u._pop()
    _set_items(u, [key, value])


def _setitems(u: WeightsUnpickler) -> None:
    _set_items(u, u._pop_mark())


def _set_items(u: WeightsUnpickler, items: list) -> None:
    target = u.stack[-1] if u.stack else None
    if type(target) not in (dict, OrderedDict, Counter):
        raise _err(f"Can only SETITEM for dict, OrderedDict or Counter; got "
                   f"{type(target).__name__}")
    if len(items) % 2:
        raise _err("SETITEMS needs key/value pairs")
    for i in range(0, len(items), 2):
        target[items[i]] = items[i + 1]


def _mark(u: WeightsUnpickler) -> None:
    u.metastack.append(u.stack)
    u.stack = []


def _tuple(u: WeightsUnpickler) -> None:
    items = u._pop_mark()
    u.stack.append(tuple(items))


def _tuple_n(n: int):
    def handler(u: WeightsUnpickler) -> None:
        if len(u.stack) < n:
            raise _err("stack underflow")
        items = tuple(u.stack[len(u.stack) - n:])
        del u.stack[len(u.stack) - n:]
        u.stack.append(items)
    return handler


def _push(value_factory):
    def handler(u: WeightsUnpickler) -> None:
        u.stack.append(value_factory())
    return handler


def _unpack(fmt: str):
    s = struct.Struct(fmt)

    def handler(u: WeightsUnpickler) -> None:
        u.stack.append(s.unpack(u._src.read(s.size))[0])
    return handler


def _binunicode(u: WeightsUnpickler) -> None:
    (n,) = struct.unpack("<I", u._src.read(4))
    u.stack.append(u._src.read(n).decode("utf-8", "surrogatepass"))


def _short_binstring(u: WeightsUnpickler) -> None:
    n = u._src.read(1)[0]
    u.stack.append(u._src.read(n).decode("latin-1"))


def _long1(u: WeightsUnpickler) -> None:
    n = u._src.read(1)[0]
    u.stack.append(int.from_bytes(u._src.read(n), "little", signed=True))


def _binpersid(u: WeightsUnpickler) -> None:
    pid = u._pop()
    if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
        raise _err("Only persistent_load of storage is allowed, but got "
                   f"{pid[0] if isinstance(pid, tuple) and pid else type(pid).__name__!r}")
    try:
        storage = u._persistent_load(pid)
    except (UnpicklingError, CheckpointError):
        raise
    except Exception as e:
        raise _Passthrough(e) from e
    u.stack.append(storage)


def _get(fmt: str):
    s = struct.Struct(fmt)

    def handler(u: WeightsUnpickler) -> None:
        (idx,) = s.unpack(u._src.read(s.size))
        if idx not in u.memo:
            raise _err(f"memo key {idx} not found")
        u.stack.append(u.memo[idx])
    return handler


def _put(fmt: str):
    s = struct.Struct(fmt)

    def handler(u: WeightsUnpickler) -> None:
        (idx,) = s.unpack(u._src.read(s.size))
        if not u.stack:
            raise _err("stack underflow")
        u.memo[idx] = u.stack[-1]
    return handler


def _stop(u: WeightsUnpickler) -> None:  # handled by the loop
    raise AssertionError


_HANDLERS = {
    pickle.PROTO: _proto, pickle.GLOBAL: _global, pickle.REDUCE: _reduce,
    pickle.NEWOBJ: _newobj, pickle.BUILD: _build, pickle.APPEND: _append,
    pickle.APPENDS: _appends, pickle.SETITEM: _setitem, pickle.SETITEMS: _setitems,
    pickle.MARK: _mark, pickle.TUPLE: _tuple, pickle.TUPLE1: _tuple_n(1),
    pickle.TUPLE2: _tuple_n(2), pickle.TUPLE3: _tuple_n(3), pickle.NONE: _push(lambda: None),
    pickle.NEWFALSE: _push(lambda: False), pickle.NEWTRUE: _push(lambda: True),
    pickle.EMPTY_TUPLE: _push(tuple), pickle.EMPTY_LIST: _push(list),
    pickle.EMPTY_DICT: _push(dict), pickle.EMPTY_SET: _push(set),
    pickle.BININT: _unpack("<i"), pickle.BININT1: _unpack("<B"), pickle.BININT2: _unpack("<H"),
    pickle.BINFLOAT: _unpack(">d"), pickle.BINUNICODE: _binunicode,
    pickle.SHORT_BINSTRING: _short_binstring, pickle.BINPERSID: _binpersid,
    pickle.BINGET: _get("<B"), pickle.LONG_BINGET: _get("<I"), pickle.BINPUT: _put("<B"),
    pickle.LONG_BINPUT: _put("<I"), pickle.LONG1: _long1, pickle.STOP: _stop,
}
SUPPORTED_OPCODES = frozenset(op[0] for op in _HANDLERS)
_OPNAMES = {op.code.encode("latin-1")[0]: op.name for op in pickletools.opcodes}


class UnsafeUnpickler(pickle.Unpickler):
    """The stdlib unpickler, with PyTorch's names mapped to ember's (``weights_only=False``).

    Unsafe by design: any other global is imported and may run arbitrary code.
    """

    def __init__(self, file, persistent_load):
        super().__init__(file)
        self._pload = persistent_load

    def persistent_load(self, pid):
        return self._pload(pid)

    def find_class(self, module, name):
        fixed_module, fixed_name = normalize(module, name)
        full = f"{fixed_module}.{fixed_name}"
        if is_default_allowed(full):
            return resolve_global(fixed_module, fixed_name)
        if full.startswith("torch."):
            # NOTE [Torch modules in whole-model pickles] in _torch_modules.py
            found = find_equivalent(fixed_module, fixed_name)
            if found is None:
                raise no_equivalent(fixed_module, fixed_name)
            return found
        return super().find_class(module, name)
